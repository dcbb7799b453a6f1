"""No unpriced run: a price model without a price row is refused at planning, never billed $0."""

from __future__ import annotations

import sys

import pytest

from evals.pipeline.run import main


def _run(monkeypatch, tmp_path, *overrides: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["snapcompact-eval", "experiment=smoke", "dry_run=true",
                                      "progress=false", *overrides])
    main()


def test_misspelt_price_model_is_refused_before_any_replay(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, tmp_path, "model.price_model=claude-sonet-4-5")
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    line = [x for x in err.splitlines() if x.startswith("snapcompact-eval: error:")]
    assert len(line) == 1
    assert "model.price_model='claude-sonet-4-5' has no price" in line[0]
    # the id the user meant is offered first (one letter away)
    assert "closest priced ids: claude-sonnet-4-5" in line[0]
    assert "allow_unpriced=true" in line[0]
    assert "compactions" not in out  # refused before a session was replayed
    assert "$0.0000" not in out + err


def test_allow_unpriced_plans_with_cost_unknown_not_zero(tmp_path, monkeypatch, capsys):
    _run(monkeypatch, tmp_path, "model=mock", "model.price_model=claude-sonet-4-5",
         "allow_unpriced=true")
    out, err = capsys.readouterr()
    assert "warning: model.price_model='claude-sonet-4-5' has no price" in out + err
    assert "dollars unknown: claude-sonet-4-5 has no price" in out
    assert "cost to spend             unknown" in out
    assert "cannot guard an unknown cost" in out
    assert "(fits)" not in out
    assert "$0.0000" not in out


def test_unpriced_summarizer_is_refused_too(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        _run(monkeypatch, tmp_path, "summarizer=offline",
             "summarizer.price_model=claude-haiku-9-9-nope")
    assert "summarizer.price_model='claude-haiku-9-9-nope' has no price" in capsys.readouterr().err


def test_priced_run_still_prints_dollars(tmp_path, monkeypatch, capsys):
    _run(monkeypatch, tmp_path, "model=mock")
    out = capsys.readouterr().out
    assert "cost to spend        $" in out and "(fits)" in out
