#!/usr/bin/env bash
# Create .venv and install the project with everything the harness and the tests need.
# Idempotent: re-installs only when pyproject.toml changed since the last successful run.
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
  echo "$want" > "$stamp"
fi
