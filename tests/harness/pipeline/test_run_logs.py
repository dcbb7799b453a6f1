"""What a run leaves behind for later: its console lines in Hydra's job log, and in every row
the versions of the packages that change answers or prices.

The CLI runs in a subprocess, as a user starts it; the job log is the file Hydra's own logging
config writes next to the run (``<run dir>/<job name>.log``). Package versions are compared
with what each package says about itself (``PIL.__version__``, ``litellm._version``, ...),
not with the harness's own lookup.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import subprocess
import sys
from pathlib import Path

from evals.store.records import iter_records


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("snapcompact-eval")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evals.pipeline.run"]


def test_console_lines_reach_the_job_log_once_and_rows_carry_package_versions(tmp_path):
    import PIL
    import tesserocr
    import tiktoken
    from litellm._version import version as litellm_version

    results = tmp_path / "R"
    args = ["experiment=smoke", "model=mock", "max_questions_per_item=1",
            f"results_dir={results}", "progress=false"]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([*_console_script(), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = results / "runs" / "smoke"
    logs = sorted(run_dir.glob("*.log"))
    assert len(logs) == 1, f"expected Hydra's one job log in {run_dir}, found {logs}"
    log_text = logs[0].read_text()
    summary = [line for line in done.stdout.splitlines() if " done, " in line and " sent, " in line]
    assert len(summary) == 1, done.stdout[-2000:]  # printed once: no second copy via logging
    assert summary[0] in log_text and "[snapcompact-eval][INFO]" in log_text
    assert "planned " in log_text and "per arm:" in log_text  # the plan, as on the console

    rows = list(iter_records(run_dir / "records.jsonl"))
    assert rows
    for row in rows:
        versions = row.dependency_versions
        assert versions["pillow"] == PIL.__version__
        assert versions["tesserocr"] == tesserocr.__version__
        assert versions["tesseract"].startswith(
            "tesseract " + tesserocr.tesseract_version().split()[1])
        assert versions["litellm"] == litellm_version
        assert versions["tiktoken"] == tiktoken.__version__
        # the blind reader's retrieval library, read from its installed metadata
        assert versions["rank-bm25"] == importlib.metadata.version("rank_bm25")


def test_a_failed_job_says_one_line_on_stderr_and_in_the_job_log(tmp_path):
    results = tmp_path / "R"
    args = ["experiment=smoke", "model=mock", "max_questions_per_item=1", "context_window=-5",
            f"results_dir={results}", "progress=false"]
    done = subprocess.run([*_console_script(), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("snapcompact-eval: ")]
    assert len(errors) == 1, done.stderr[-2000:]
    logs = list((results / "runs" / "smoke").glob("*.log"))
    assert len(logs) == 1 and errors[0] in logs[0].read_text()
    assert "[snapcompact-eval][ERROR]" in logs[0].read_text()


def test_the_library_logger_has_no_handler_but_a_null_one():
    import snapcompact  # noqa: F401  (importing the package installs the NullHandler)

    handlers = logging.getLogger("snapcompact").handlers
    assert [type(h) for h in handlers] == [logging.NullHandler]
