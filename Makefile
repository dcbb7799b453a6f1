# Entry points; the README's quick start uses `make run` and `make test`.
PY := .venv/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_DATASETS_OFFLINE := 1
export HF_HUB_OFFLINE := 1
export OMP_THREAD_LIMIT := 1

.PHONY: setup run results test lint bench demo golden slurm-check notebooks

setup:
	@bash scripts/setup.sh

# Main job: the default offline experiment at 200k and its 32k small-window arm (embedded OCR
# reader), then their tables and figures, then the records viewer of all four runs (told and
# blind side by side; open results/view/index.html; not committed, like results/runs/).
# The 200k and 32k sessions are asked again of the blind reader (told only the question; the OCR
# cache is shared), and the outcome tables (correct / abstained / wrong by probe kind, told vs
# blind at 200k and at 32k) go to results/outcomes/.
run: setup results

results:
	$(PY) -m evals.pipeline.run
	$(PY) -m evals.pipeline.run experiment=small_window
	$(PY) -m evals.pipeline.run reader=blind experiment_name=default_blind
	$(PY) -m evals.pipeline.run experiment=small_window reader=blind experiment_name=small_window_blind
	$(PY) -m evals.analysis.table results/runs/default results/runs/small_window --out results --seed 0 --bootstrap 2000
	$(PY) -m evals.analysis.outcomes results/runs/default results/runs/default_blind results/runs/small_window results/runs/small_window_blind --out results/outcomes --seed 0 --bootstrap 2000
	$(PY) -m evals.analysis.frame_pay --main-job --out results/frame_pay
	$(PY) -m evals.view results/runs/default results/runs/default_blind results/runs/small_window results/runs/small_window_blind --out results/view

# Execute every notebook headless on the committed result tables; their figures go to
# results/figures/ as PNG (scripts/run_notebooks.py).
notebooks: setup
	$(PY) scripts/run_notebooks.py

# Render a sample text with all 17 shape variants into out/demo/.
demo: setup
	$(PY) -m snapcompact.cli.demo --out out/demo

# The suite on every core (pytest-xdist; at most 4 workers: each holds up to ~2 GB at its peak).
# `$(PY) -m pytest -q` runs it in one process.
test: setup
	$(PY) -m pytest -q -n auto --maxprocesses 4

# Static checks CI runs before the tests: ruff (pycodestyle, pyflakes, import order, docstrings on
# the library's public names) on library and harness, mypy on the library ([tool.mypy] files).
lint: setup
	$(PY) -m ruff check snapcompact evals
	$(PY) -m mypy

# A sweep of 4 jobs on a real single-node Slurm (scripts/slurm.sh: needs root; installs
# slurm-wlm and munge), its rerun, and the same sweep locally; see scripts/slurm_check.py.
slurm-check: setup
	$(PY) scripts/slurm_check.py

bench: setup
	$(PY) benchmarks/bench_render.py

# Regenerate golden frames from the reference renderer (needs ../shared/tools/upstream-frames).
golden: setup
	$(PY) tests/golden/render/make_golden.py
