#!/usr/bin/env bash
# Committed outputs must not depend on the day they are made (issue 44 item 6): run the main
# job's results in a fresh clone of HEAD, commit them there, then run them again from fresh
# records with the clock a day later (libfaketime) and require `git status --porcelain` empty.
#
#   scripts/clock_check.sh                 # `make results` twice: about two main-job runs
#   scripts/clock_check.sh 'CMD'           # any command writing committed outputs, e.g. the
#                                          # smoke run and its tables (below), in ~2 min
#   scripts/clock_check.sh '$PY -m evals.pipeline.run experiment=smoke && $PY -m evals.analysis.table results/runs/smoke --out results/smoke'
#
# The second run starts from no records (results/runs moved away) but keeps the response cache,
# as a warm checkout would; faketime comes from Debian's `faketime` package (apt-get, as root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command=${1:-make results}
if ! command -v faketime >/dev/null; then
  apt-get install -y -q faketime >/dev/null
fi
work=$(mktemp -d /tmp/clock-check.XXXXXX)
git clone -q "$root" "$work/clone"
cd "$work/clone"
ln -s "${VENV:-$root/.venv}" .venv  # VENV: another checkout's venv (the project is on sys.path via -m)
export PY=.venv/bin/python LITELLM_LOCAL_MODEL_COST_MAP=True HF_DATASETS_OFFLINE=1 \
  HF_HUB_OFFLINE=1 OMP_THREAD_LIMIT=1
echo "clock check in $work/clone at $(git rev-parse --short HEAD): $command"
bash -c "$command" >"$work/today.log" 2>&1
git add -A && git -c user.name=clock-check -c user.email=clock-check@localhost \
  commit -q --allow-empty -m "outputs made today"
mv results/runs "$work/runs-today"
faketime -f '+1d' bash -c "$command" >"$work/tomorrow.log" 2>&1
echo "records of the second run stamped: $(grep -ho '"created_at": *"[^"]*"' -m1 -r results/runs | head -1)"
changed=$(git status --porcelain)
if [ -n "$changed" ]; then
  echo "clock check: FAILED, a day later these outputs changed:"
  echo "$changed"
  git --no-pager diff --stat
  exit 1
fi
echo "clock check: git status --porcelain is empty a day later"
