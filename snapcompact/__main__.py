from snapcompact.cli import main

raise SystemExit(main())
