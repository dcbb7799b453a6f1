"""Response cache: what the key depends on, atomic storage, concurrent writers."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from evals.send.response_cache import CachedResponse, ResponseCache, answer_params, request_key

FRAME_A = hashlib.sha256(b"frame a pixels").hexdigest()
FRAME_B = hashlib.sha256(b"frame b pixels").hexdigest()


def image_part(url: str = "data:image/png;base64,AAAA", detail: str | None = "high") -> dict:
    image = {"url": url}
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def base_request() -> dict:
    return dict(
        model="anthropic/claude-sonnet-4-5",
        messages=[
            {"role": "system", "content": "Answer from the frames."},
            {
                "role": "user",
                "content": [
                    image_part(),
                    image_part("data:image/png;base64,BBBB"),
                    {"type": "text", "text": "Who wrote the letter?"},
                ],
            },
        ],
        params={"temperature": 0.0, "max_tokens": 64},
        frame_hashes=(FRAME_A, FRAME_B),
        renderer_version="snapcompact 0.1.0 / font 8x13",
    )


def key_of(**changes) -> str:
    request = base_request()
    request.update(changes)
    return request_key(**request)


def with_user_content(content: list) -> list:
    return [{"role": "system", "content": "Answer from the frames."}, {"role": "user", "content": content}]


# Each change must give a new key: it can change what the model answers.
ANSWER_CHANGES = {
    "model": dict(model="openrouter/anthropic/claude-sonnet-4-5"),
    "temperature": dict(params={"temperature": 0.7, "max_tokens": 64}),
    "max_tokens": dict(params={"temperature": 0.0, "max_tokens": 65}),
    "extra param": dict(params={"temperature": 0.0, "max_tokens": 64, "top_p": 0.9}),
    "renderer_version": dict(renderer_version="snapcompact 0.1.1 / font 8x13"),
    "frame pixels": dict(frame_hashes=(FRAME_A, hashlib.sha256(b"other").hexdigest())),
    "frame order": dict(frame_hashes=(FRAME_B, FRAME_A)),
    "question text": dict(messages=with_user_content(
        [image_part(), image_part(), {"type": "text", "text": "Who wrote the letters?"}])),
    "image detail": dict(messages=with_user_content(
        [image_part(detail="low"), image_part(), {"type": "text", "text": "Who wrote the letter?"}])),
    "part order": dict(messages=with_user_content(
        [{"type": "text", "text": "Who wrote the letter?"}, image_part(), image_part()])),
    "role": dict(messages=[{"role": "user", "content": "Answer from the frames."},
                           base_request()["messages"][1]]),
}


@pytest.mark.parametrize("change", sorted(ANSWER_CHANGES))
def test_key_changes_with_everything_that_changes_the_answer(change):
    assert key_of(**ANSWER_CHANGES[change]) != key_of()


# Credentials and transport never change the answer, and must never reach the key.
TRANSPORT_PARAMS = {
    "api_key": "sk-test-not-a-real-key",
    "api_base": "http://127.0.0.1:41234/v1",
    "headers": {"Authorization": "Bearer abc"},
    "extra_headers": {"x-api-key": "sk-ant-xyz"},
    "timeout": 30,
    "max_retries": 0,
    "metadata": {"item": 3},
    "my_provider_api_key": "secret-value",
    "vertex_credentials": "{...}",
}


@pytest.mark.parametrize("name", sorted(TRANSPORT_PARAMS))
def test_key_ignores_credentials_and_transport(name):
    params = {"temperature": 0.0, "max_tokens": 64, name: TRANSPORT_PARAMS[name]}
    assert key_of(params=params) == key_of()
    assert name not in answer_params(params)


def test_key_is_canonical():
    same = key_of()
    assert key_of(params={"max_tokens": 64, "temperature": 0}) == same  # order, 0 == 0.0
    # The base64 is not hashed: the frame hash stands for the pixels.
    other_b64 = with_user_content(
        [image_part("data:image/png;base64,ZZZZ"), image_part("data:image/png;base64,YYYY"),
         {"type": "text", "text": "Who wrote the letter?"}])
    assert key_of(messages=other_b64) == same
    assert len(same) == 64 and int(same, 16) >= 0


@pytest.mark.parametrize(
    "changes, problem",
    [
        (dict(frame_hashes=(FRAME_A,)), "is an image but frame_hashes has only 1"),
        (dict(frame_hashes=(FRAME_A, FRAME_B, FRAME_A)), "frame_hashes has 3 entries"),
        (dict(frame_hashes=(FRAME_A, "not-a-hash")), "not a lowercase SHA-256"),
        (dict(params={"temperature": float("nan")}), "non-finite"),
        (dict(params={"temperature": object()}), "not JSON data"),
        (dict(model=""), "model"),
        (dict(renderer_version=""), "renderer_version"),
        (dict(messages=["hello"]), "messages[0]"),
    ],
)
def test_key_rejects_bad_input(changes, problem):
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        key_of(**changes)


def entry(answer: str = "Ada Lovelace", latency: float = 1.25) -> CachedResponse:
    return CachedResponse(answer=answer, prompt_tokens=1234, completion_tokens=5, cost_usd=0.0038,
                          model="claude-sonnet-4-5", latency_s=latency, created_unix=1.7e9)


def test_put_get_round_trip_and_layout(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    key = key_of()
    assert cache.get(key) is None and key not in cache
    cache.put(key, entry())
    assert cache.get(key) == entry()
    path = tmp_path / "cache" / key[:2] / f"{key[2:]}.json"
    assert path.is_file()
    stored = json.loads(path.read_text())
    # Only the answer and its accounting are stored: no request, no credential.
    assert set(stored) == {"schema", "answer", "prompt_tokens", "completion_tokens", "cost_usd",
                           "model", "latency_s", "created_unix", "cache_read_tokens",
                           "cache_write_tokens", "reasoning_tokens"}
    assert list(cache.keys()) == [key] and len(cache) == 1
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


def test_unreadable_entries_are_misses(tmp_path):
    cache = ResponseCache(tmp_path)
    key = key_of()
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_text('{"schema": 999, "answer": "old layout"}')
    assert cache.get(key) is None
    cache.put(key, entry())  # a put repairs it
    assert cache.get(key) == entry()


def test_bad_keys_and_values_are_rejected(tmp_path):
    cache = ResponseCache(tmp_path)
    with pytest.raises(ValueError, match="not a lowercase SHA-256"):
        cache.get("../../etc/passwd")
    with pytest.raises(ValueError, match="CachedResponse"):
        cache.put(key_of(), {"answer": "x"})


def test_concurrent_thread_writers_and_readers(tmp_path):
    cache = ResponseCache(tmp_path)
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(8)]
    seen_bad: list[object] = []
    stop = threading.Event()

    def writer(worker: int) -> None:
        for round_ in range(15):
            for key in keys:
                cache.put(key, entry(answer=f"answer {key[:6]}", latency=worker + round_ / 100))

    def reader() -> None:
        while not stop.is_set():
            for key in keys:
                got = cache.get(key)
                if got is not None and got.answer != f"answer {key[:6]}":
                    seen_bad.append(got)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not seen_bad
    assert sorted(cache.keys()) == sorted(keys)
    assert not list(Path(tmp_path).rglob(".tmp-*"))


PROCESS_WRITER = textwrap.dedent(
    """
    import hashlib, sys
    from evals.send.response_cache import CachedResponse, ResponseCache
    cache = ResponseCache(sys.argv[1])
    worker = int(sys.argv[2])
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(6)]
    bad = 0
    for round_ in range(30):
        for key in keys:
            got = cache.get(key)
            if got is not None and got.answer != "answer " + key[:6]:
                bad += 1
            cache.put(key, CachedResponse(answer="answer " + key[:6], prompt_tokens=worker,
                      completion_tokens=round_, cost_usd=None, model="m", latency_s=0.5,
                      created_unix=1.0))
    print(bad)
    """
)


def test_concurrent_process_writers(tmp_path):
    """Hydra's joblib launcher runs jobs in processes that share one cache directory."""
    processes = [
        subprocess.Popen([sys.executable, "-c", PROCESS_WRITER, str(tmp_path), str(w)],
                         stdout=subprocess.PIPE, text=True)
        for w in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in processes]
    assert [p.returncode for p in processes] == [0] * 4
    assert outputs == ["0"] * 4  # no reader ever saw a partial or foreign entry
    cache = ResponseCache(tmp_path)
    keys = sorted(cache.keys())
    assert len(keys) == 6
    for key in keys:
        got = cache.get(key)
        assert got is not None and got.answer == f"answer {key[:6]}"
    assert not list(Path(tmp_path).rglob(".tmp-*"))


def test_offline_reader_inputs_are_part_of_the_key() -> None:
    # The embedded OCR reader answers from evidence/answers sent as metadata: two questions
    # with the same text over the same frames but different evidence must not share a reply.
    from evals.send.response_cache import request_key

    base = dict(model="snapocr/ocr-qa", messages=[{"role": "user", "content": "Q?"}], params={},
                frame_hashes=[], renderer_version="1")
    a = request_key(**base, reader_inputs={"evidence": "The code is 1.", "answers": ["1"]})
    b = request_key(**base, reader_inputs={"evidence": "The code is 2.", "answers": ["2"]})
    assert a != b
    assert request_key(**base) == request_key(**base, reader_inputs=None)
