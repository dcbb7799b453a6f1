"""Pinned request text and cache key per reader: a wording or key change is a visible diff.

A sweep's answers are cached under a key over the request (``evals.send.response_cache``). A change to the
harness's wording (system prompt, question template), to what the key covers, or to the frames'
pixels silently re-asks, and re-bills, every question of every sweep rerun after it. Here the
smoke experiment's first question per arm is planned for each reader (the offline OCR reader and
three providers' request forms) and compared with a golden JSON in ``tests/golden/requests/``:
the text the model would read (long context text as its SHA-256, length and first characters;
harness-written text in full; frames as their pixel digest and detail), the answer params, the
offline reader's side channel, and the cache key.

When a change is intended, regenerate and review the diff like code::

    SNAPCOMPACT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/harness/pipeline/test_request_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hydra_compose import compose_eval
from locations import GOLDEN

from evals.pipeline.plan import build_plan
from evals.pipeline.run_loop import make_client
from evals.send.response_cache import LOCATION_READER_INPUTS
from evals.spec.run_spec import RunSpec

GOLDEN_DIR = GOLDEN / "requests"
UPDATE = os.environ.get("SNAPCOMPACT_UPDATE_GOLDEN") == "1"
#: Text parts longer than this are pinned by hash (session text); shorter ones in full.
FULL_TEXT_CHARS = 1500
READERS = ["ocr", "gpt-5", "claude-sonnet-4-5", "gemini-2.5-flash"]


def _text(text: str) -> Any:
    if len(text) <= FULL_TEXT_CHARS:
        return text
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "chars": len(text),
            "head": text[:160]}


def _message(message: dict[str, Any], pixels: list[str]) -> dict[str, Any]:
    content = message.get("content")
    out = {k: v for k, v in message.items() if k != "content"}
    if isinstance(content, str):
        out["content"] = _text(content)
    elif isinstance(content, list):
        parts = []
        for part in content:
            if part.get("type") == "image_url":
                parts.append({"image_pixels": pixels.pop(0),
                              "detail": part["image_url"].get("detail")})
            elif part.get("type") == "text":
                parts.append({**part, "text": _text(part["text"])})
            else:
                parts.append(part)
        out["content"] = parts
    else:
        out["content"] = content
    return out


def _pinned_requests(reader: str, tmp_path: Path) -> dict[str, Any]:
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false",
                                     "experiment=smoke", "max_questions_per_item=1",
                                     f"model={reader}", "dry_run=true"])
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    plan = build_plan(spec, tmp_path, log=lambda _: None)
    client = make_client(spec)
    requests = []
    for p in sorted(plan.planned, key=lambda p: (p.context.arm.label, p.question_id)):
        request = p.request()
        pixels = list(request.frame_hashes)
        side = {k: v for k, v in dict(request.metadata.get("snapocr") or {}).items()
                if k not in LOCATION_READER_INPUTS}
        requests.append({
            "arm": p.context.arm.label,
            "question_id": p.question_id,
            "model": request.model,
            "params": {k: v for k, v in request.params.items() if k != "tools"},
            "tools": [t.get("function", t).get("name") for t in request.params.get("tools", [])],
            "messages": [_message(m, pixels) for m in request.messages],
            "reader_inputs": side or None,
            "cache_key": client.key_for(request),
        })
    return {"reader": reader, "requests": requests}


@pytest.mark.parametrize("reader", READERS)
def test_request_text_and_cache_key_are_pinned(reader, tmp_path):
    got = _pinned_requests(reader, tmp_path)
    path = GOLDEN_DIR / f"{reader}.json"
    text = json.dumps(got, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    want = json.loads(path.read_text(encoding="utf-8"))
    assert len(got["requests"]) == len(want["requests"]) >= 4  # every arm of the smoke run
    for mine, pinned in zip(got["requests"], want["requests"]):
        where = f"{reader} {pinned['arm']} {pinned['question_id']}"
        for field in ("arm", "question_id", "model", "params", "tools", "messages",
                      "reader_inputs"):
            assert mine[field] == pinned[field], f"{where}: request {field} changed"
        # the request is the same but its key is not: the key's recipe changed
        assert mine["cache_key"] == pinned["cache_key"], f"{where}: cache key changed"
