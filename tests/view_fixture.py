"""A small run in the compaction-record format, for the viewer's tests and screenshots.

Built from real parts: frames from the library's renderer (stored in a ``FrameStore``), seen
sizes and image tokens from its billing, readings from the offline reader's own ``reading_of``,
rows from ``Record`` plus the fields the compaction harness adds (``strategy``, ``policy``,
``evidence_round``, ``context_hash``, ...). Contexts are stored the way the harness stores them:
``contexts/ab/<sha256>.json``, the wire messages with each image replaced by its frame hash.

The run has three cells (snapcompact/pinned on one shape, snapcompact/foveated on another,
truncate on text) times three questions, plus one row in the old format (no compaction fields,
no context_hash) that the viewer must still show.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.readers.provider import ReaderRequest, reading_of
from evals.store.records import RECORDS_FILE, FrameStore, Record
from evals.store.transcripts import TRANSCRIPTS_DIR, TranscriptStore
from snapcompact.billing import bill_image
from snapcompact.pricing import resolve_shape
from snapcompact.render import render_many

TARGET = "openai/gpt-5"
SYSTEM = "You are a coding agent. Earlier turns of this session were archived as images."

HISTORY = "\n".join(
    [f"turn {i}: ran the test suite, {i * 7 % 13} failures in module m{i}." for i in range(110)]
    + ["The deploy key for the staging cluster is KX7-20481 and it rotates on Fridays.",
       "The build cache lives in /var/cache/snap-build and is pruned at 40 GiB.",
       "The release manager for version 3.2 is Dana Okafor."]
    + [f"turn {i}: refactored parser step {i}, all green." for i in range(110, 200)]
)

QUESTIONS = (
    # id, question, gold answers, evidence sentence, evidence round
    ("q1", "What is the deploy key for the staging cluster?", ("KX7-20481",),
     "The deploy key for the staging cluster is KX7-20481 and it rotates on Fridays.", 0),
    ("q2", "Where does the build cache live?", ("/var/cache/snap-build",),
     "The build cache lives in /var/cache/snap-build and is pruned at 40 GiB.", 1),
    ("q3", "Who is the release manager for version 3.2?", ("Dana Okafor",),
     "The release manager for version 3.2 is Dana Okafor.", 2),
)

# (strategy, policy, shape, frame size, arm, answers given per question id, OCR noise)
CELLS = (
    ("snapcompact", "pinned", "11on16-bw", 1024, "image",
     {"q1": "KX7-20481", "q2": "/var/cache/snap-build", "q3": "Dana Okafor"}, False),
    ("snapcompact", "foveated", "8on22-bw", 1024, "image",
     {"q1": "KX7-2O481", "q2": "/var/cache/snap-build", "q3": "unanswerable"}, True),
    ("truncate", "", "text", 0, "text",
     {"q1": "KX7-20481", "q2": "unanswerable", "q3": "unanswerable"}, False),
)


@dataclass
class FixtureRun:
    run_dir: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)  # hash -> stored JSON
    frames: set[str] = field(default_factory=set)
    transcripts: set[str] = field(default_factory=set)
    # (strategy, policy, shape) -> question ids asked there
    cells: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)


def _store_json(root: Path, data: dict[str, Any]) -> str:
    raw = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
    digest = hashlib.sha256(raw).hexdigest()
    path = root / digest[:2] / f"{digest}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return digest


def _noisy(text: str) -> str:
    """What a shaky OCR might read: O for 0 in the key, a dropped space elsewhere."""
    return text.replace("KX7-20481", "KX7-2O481").replace("3.2 is", "3.2is")


def _base_record(**values: Any) -> Record:
    base = dict(
        run_id="fixture", experiment="view-fixture", dataset="needles", item_id="session-1",
        question_id="q1", model="snapocr/ocr-qa", target_model=TARGET, arm="image",
        shape="11on16-bw", frame_size=768, reader="image_qa", seed=0, package_version="0.1.0",
        git_sha="fixture", shape_table_sha256="0" * 64, pricing_table_sha256="0" * 64,
        renderer_version="fixture", frames=0, frame_px=(), frame_hashes=(),
        history_chars=len(HISTORY), text_tokens=40, text_token_method="fixture",
        predicted_image_tokens=0, predicted_prompt_tokens=0, predicted_cost_usd=None, answer="",
        reported_prompt_tokens=None, reported_completion_tokens=None, reported_cost_usd=None,
        latency_s=0.01, cached=False, error=None, attempts=1, em=0.0, f1=0.0, correct=False,
        abstained=False, question="", gold_answers=(), created_at="2026-12-01T00:00:00+00:00",
        extra={"note": "offline OCR reader: legibility floor, not a model ranking"})
    base.update(values)
    return Record.from_fields(**base)


def build_fixture_run(run_dir: Path) -> FixtureRun:
    run_dir.mkdir(parents=True, exist_ok=True)
    run = FixtureRun(run_dir=run_dir)
    frames_store = FrameStore(run_dir / "frames")
    readings = TranscriptStore(run_dir / TRANSCRIPTS_DIR)
    tail = HISTORY[-600:]
    for strategy, policy, shape, size, arm, answers, noisy in CELLS:
        images: list[dict[str, Any]] = []
        if arm == "image":
            resolved = resolve_shape(TARGET, shape=shape, frame_size=size)
            for frame in render_many(HISTORY, resolved.shape):
                digest = frames_store.put(frame.png)
                bill = bill_image(TARGET, frame.width, frame.height, resolved.image_detail)
                run.frames.add(digest)
                images.append({"type": "image", "frame_hash": digest, "width": frame.width,
                               "height": frame.height, "seen_width": bill.seen_width,
                               "seen_height": bill.seen_height, "tokens": bill.tokens})
        user_parts = ([{"type": "text", "text": "Archived history (images):"}, *images]
                      if images else [])
        context = {"messages": [
            {"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
            *([{"role": "user", "content": user_parts},
               {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}]
              if user_parts else []),
            {"role": "user", "content": [{"type": "text", "text": tail}]},
        ]}
        context_hash = _store_json(run_dir / "contexts", context)
        run.contexts[context_hash] = context
        image_tokens = sum(p["tokens"] for p in images)
        text_tokens = 150
        run.cells[(strategy, policy, shape)] = []
        for qid, question, gold, evidence, evidence_round in QUESTIONS:
            answer = answers[qid]
            read_text = _noisy(HISTORY) if noisy else HISTORY
            reading = reading_of(ReaderRequest(model="text-qa", images=(),
                                               texts=(read_text, question), evidence=evidence,
                                               answers=gold))
            assert reading is not None
            if arm == "image":
                reading = dataclasses.replace(reading, reader="ocr-qa")
            reading_part = readings.put(reading)
            run.transcripts.add(reading_part["transcript"])
            correct = answer in gold
            record = _base_record(
                question_id=qid, question=question, gold_answers=gold, answer=answer,
                correct=correct, em=float(correct), f1=1.0 if correct else 0.0,
                abstained=answer == "unanswerable",
                arm=arm, shape=shape, frame_size=size,
                model="snapocr/ocr-qa" if arm == "image" else "snapocr/text-qa",
                reader="image_qa" if arm == "image" else "text_qa",
                frames=len(images),
                frame_px=tuple((p["width"], p["height"]) for p in images),
                frame_hashes=tuple(p["frame_hash"] for p in images),
                predicted_image_tokens=image_tokens,
                predicted_prompt_tokens=image_tokens + text_tokens,
                text_tokens=text_tokens, reading=reading_part,
                extra={"note": "offline OCR reader: legibility floor, not a model ranking"})
            row = record.to_json()
            row.update({
                "strategy": strategy, "policy": policy, "compactions": 2,
                "evidence_round": evidence_round,
                "frames_evicted": 1 if policy == "foveated" else 0,
                "text_tail_chars": len(tail),
                "compaction_cost_tokens": 900, "context_hash": context_hash,
            })
            run.rows.append(row)
            run.cells[(strategy, policy, shape)].append(qid)

    # one row in the old format: no compaction fields, no context_hash, no transcript
    first = next(r for r in run.rows if r["shape"] == "11on16-bw")
    legacy = _base_record(
        run_id="fixture-legacy", question_id="q1", question=first["question"],
        frame_size=first["frame_size"],
        gold_answers=tuple(first["gold_answers"]), answer="KX7-20481", correct=True, em=1.0,
        f1=1.0, frames=first["frames"], frame_px=tuple(tuple(p) for p in first["frame_px"]),
        frame_hashes=tuple(first["frame_hashes"]),
        predicted_image_tokens=first["predicted_image_tokens"],
        predicted_prompt_tokens=first["predicted_prompt_tokens"],
        extra={"seen_px": [[p["seen_width"], p["seen_height"]] for p in
                           run.contexts[first["context_hash"]]["messages"][1]["content"][1:]],
               "image_tokens_per_frame": [p["tokens"] for p in
                                          run.contexts[first["context_hash"]]["messages"][1]
                                          ["content"][1:]]})
    legacy_row = legacy.to_json()
    legacy_row["schema_version"] = 2  # the coordinates below still sit in extra, as schema 2 kept them
    run.rows.append(legacy_row)
    run.cells[("", "", "11on16-bw")] = ["q1"]
    with (run_dir / RECORDS_FILE).open("w", encoding="utf-8") as fh:
        for row in run.rows:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
    return run
