"""Shared pieces of the reliability tests that run the smoke experiment on litellm's mock
model (the rows of the original reliability issue, now split into files named for what they
test): the overrides, a counting completion function and the rows a run wrote."""

from __future__ import annotations

from evals.store.records import iter_records

TOTAL_MOCK_ROWS = 16  # model=mock, the smoke session with 4 facts: 4 questions x 4 arms


def mock_overrides(tmp_path):
    return [f"results_dir={tmp_path}", "progress=false", "model=mock", "experiment=smoke",
            "dataset.params.depths=[0.1,0.4,0.6,0.9]"]


class Counting:
    """litellm.acompletion, counted."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, **kwargs):
        from evals.send.client import import_litellm

        self.calls += 1
        return await import_litellm().acompletion(**kwargs)


def rows_of(run_dir):
    return list(iter_records(run_dir / "records.jsonl"))
