from snapcompact.cli.main import main

raise SystemExit(main())
