"""Folders and limits the user did not mean: paths that escape, a results_dir that is a file and a
frame cap are refused before anything is drawn; an unwritable OCR cache warns once and reads.

Part of issue 13 (reliability: nothing paid for is lost, nothing is billed twice).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from mock_runs import Counting, mock_overrides

from evals.pipeline.run import run_config


@pytest.mark.parametrize("override,problem", [
    ("experiment_name=../../x", "plain folder name"),
    ("experiment_name=a/b", "plain folder name"),
    ("results_dir=''", "results_dir must be a non-empty string"),
    ("max_frames=0", "max_frames must be an integer >= 1"),
])
def test_run_spec_refuses_paths_that_escape(tmp_path, override, problem):
    from evals.spec.run_spec import RunSpec

    cfg = compose_eval([f"results_dir={tmp_path}", "model=mock", override])
    with pytest.raises(ValueError, match=problem):
        RunSpec.from_config(cfg, base_dir=tmp_path)


def test_results_dir_that_is_a_file_is_refused(tmp_path):
    from evals.spec.run_spec import RunSpec

    (tmp_path / "afile").write_text("x")
    cfg = compose_eval([f"results_dir={tmp_path / 'afile'}", "model=mock"])
    with pytest.raises(ValueError, match="is a file, not a folder"):
        RunSpec.from_config(cfg, base_dir=tmp_path)


def test_frame_cap_refuses_before_drawing(tmp_path):
    overrides = [*mock_overrides(tmp_path), "max_frames=1", "frame_size=96", "context_window=24000",
                 "strategies=[snapcompact]",
                 "shapes=[11on16-bw]"]
    with pytest.raises(ValueError, match="frames, more than max_frames=1"):
        run_config(compose_eval(overrides), tmp_path / "run", base_dir=tmp_path,
                   completion_fn=Counting())


def test_unwritable_ocr_cache_warns_once_and_still_reads(tmp_path, monkeypatch):
    from evals.readers import ocr
    from snapcompact.render import render_many

    png = render_many("The code is 7342.", "11on16-bw", 512)[0].png
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ocr.clear_memory_cache()
    with pytest.warns(RuntimeWarning, match="cannot write"):
        text = ocr.transcribe(png, cache_dir=blocker / "ocr")
    assert "7342" in text
