#!/usr/bin/env bash
# Install the way a researcher would, not the way a developer does: build the wheel, install it
# with the harness extras into a fresh venv, and run `snapcompact-eval experiment=smoke` from an
# empty directory, so nothing of the checkout (configs/, fonts/, the source tree) is within
# reach. Then the same command again: the rerun must be served from the response cache.
# Used by .ci/run; needs the package index the editable install uses (pip's cache makes it quick).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/snapcompact_evals-*.whl)
echo "wheel-smoke: built $(basename "$wheel")"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "${wheel}[evals]"
mkdir "$work/empty"
cd "$work/empty"
where=$("$work/venv/bin/python" -c 'import evals, snapcompact; print(snapcompact.__file__)')
case "$where" in
  "$work/venv/"*) ;;
  *) echo "wheel-smoke: snapcompact imported from $where, not the fresh venv" >&2; exit 1 ;;
esac
"$work/venv/bin/snapcompact-eval" experiment=smoke progress=false
records=results/runs/smoke/records.jsonl
rows=$(wc -l < "$records")
[ "$rows" -gt 0 ] || { echo "wheel-smoke: no rows in $records" >&2; exit 1; }
rm "$records"  # forget the rows, keep the response cache: every answer must come from it
"$work/venv/bin/snapcompact-eval" experiment=smoke progress=false | tee "$work/rerun.txt"
grep -q " done, 0 sent, " "$work/rerun.txt" || {
  echo "wheel-smoke: the rerun sent requests; the response cache missed" >&2; exit 1; }
echo "wheel-smoke: ok: $rows rows from an empty directory; the rerun sent 0 requests"
