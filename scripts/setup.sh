#!/usr/bin/env bash
# Create .venv and install the project with everything the harness and the tests need, plus the
# system Chromium the records viewer's browser test drives (Debian package, never a downloaded
# browser build). Idempotent: re-installs only when pyproject.toml changed since the last
# successful run, and asks apt only while /usr/bin/chromium is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.snapcompact-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[evals,dev]'
  # ctok (the Claude token counter, pure Python) declares Python >= 3.12 but runs on 3.11; its
  # one dependency (regex) comes with tiktoken. pyproject.toml pins it for 3.12+.
  if ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
      --ignore-requires-python ctok==1.3.0
  fi
  echo "$want" > "$stamp"
fi
# Bytecode for the project's own modules, as a wheel install has it: an editable install
# compiles nothing, and with PYTHONDONTWRITEBYTECODE set (as on CI machines) every process would
# otherwise compile them from source again (about 0.1 s before the first frame). Cheap when
# nothing changed.
.venv/bin/python -m compileall -q -j 0 snapcompact evals >/dev/null

# The viewer's browser test (tests/harness/view/test_view_browser.py) drives the system Chromium. Installed
# only as root on an apt system; elsewhere the test skips and says why.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing chromium (apt) for the viewer's browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "setup: /usr/bin/chromium missing and not root: the viewer's browser test will skip" >&2
  fi
fi
