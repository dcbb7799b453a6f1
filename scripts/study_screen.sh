#!/usr/bin/env bash
# The validity screen a study plan quotes (configs/study/recommended_rerun.yaml, `power`): dry
# runs (no reader, nothing sent) of both arms on the pilot's seeds 13-52, already used, at the
# plan's length schedule; prints per arm how many sessions drew frames without handing over.
# Usage: scripts/study_screen.sh [OUT_DIR]   (about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/study_screen}
mkdir -p "$out"
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 OMP_THREAD_LIMIT=1
one() {
  local s=$1 arm=$2 tokens=$((240000 + 2000 * ($1 - 13)))
  .venv/bin/python -m evals.pipeline.run dataset=agent-session-probes seed="$s" \
    dataset.params.n_items=1 dataset.params.target_tokens="$tokens" research="$arm" model=ocr \
    summarizer=offline context_window=200000 'strategies=[snapcompact]' 'policies=[foveated]' \
    'shapes=[auto]' experiment_name=screen results_dir="$out/r$s-$arm" dry_run=true \
    > "$out/s$s-$arm.log" 2>&1
}
export -f one
export out
for s in $(seq 13 52); do printf '%s production\n%s recommended\n' "$s" "$s"; done \
  | xargs -P 2 -n 2 bash -c 'one "$0" "$1"'
for arm in production recommended; do
  drew=0
  for s in $(seq 13 52); do
    frames=$(grep -oE 'compactions, [0-9]+ frames' "$out/s$s-$arm.log" | head -1 | awk '{print $2}')
    [ "${frames:-0}" -gt 0 ] && drew=$((drew + 1))
  done
  echo "$arm: drew frames without handing over on $drew of 40 sessions"
done
