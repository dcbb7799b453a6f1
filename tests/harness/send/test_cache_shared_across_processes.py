"""Processes sharing one response cache send each request once (a dead process's claim is not
stale); the cache keys hold no paths, so a copied results folder answers from its cache.

Part of issue 13 (reliability: nothing paid for is lost, nothing is billed twice).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from mock_runs import Counting

from evals.pipeline.run import run_config
from evals.send.client import EvalClient, Request, RetryPolicy
from evals.send.response_cache import ResponseCache, request_key


def _client(cache_root, completion):
    return EvalClient(cache=ResponseCache(cache_root), renderer_version="r1",
                      retry=RetryPolicy(max_attempts=2, base_delay_s=0.01), concurrency=8,
                      completion_fn=completion, seed=0)


def _mock_request(i: int) -> Request:
    return Request(model="anthropic/claude-sonnet-4-5",
                   messages=[{"role": "user", "content": f"question {i}"}],
                   params={"mock_response": f"answer {i}", "max_tokens": 8})


def test_processes_sharing_a_cache_send_each_request_once(tmp_path):
    """Two clients (as two sweep jobs would be) ask the same 12 questions at the same time."""
    from evals.send.client import import_litellm

    litellm = import_litellm()
    sent: list[str] = []
    lock = threading.Lock()

    async def slow_completion(**kwargs):
        with lock:
            sent.append(kwargs["messages"][0]["content"])
        await asyncio.sleep(0.05)
        return await litellm.acompletion(**kwargs)

    requests = [_mock_request(i) for i in range(12)]
    answers: list[list] = []

    def job(order):
        client = _client(tmp_path / "cache", slow_completion)
        answers.append(asyncio.run(client.complete_all([requests[i] for i in order])))

    threads = [threading.Thread(target=job, args=(range(12),)),
               threading.Thread(target=job, args=(range(11, -1, -1),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sent) == sorted(f"question {i}" for i in range(12))  # each exactly once
    assert all(r.ok for batch in answers for r in batch)
    assert sum(r.cached for batch in answers for r in batch) == 12
    assert not list((tmp_path / "cache").rglob("*.claim"))  # claims are cleaned up


def test_a_claim_held_by_a_dead_process_is_not_stale(tmp_path):
    import multiprocessing

    cache = ResponseCache(tmp_path)
    key = "ef" + "2" * 62
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()

    def holder():
        claim = ResponseCache(tmp_path).claim(key)
        assert claim.try_acquire()
        ready.set()
        time.sleep(60)

    proc = ctx.Process(target=holder)
    proc.start()
    assert ready.wait(30)
    assert not cache.claim(key).try_acquire()  # held by the live process
    proc.kill()  # kill -9: the kernel drops its lock
    proc.join()
    claim = cache.claim(key)
    assert claim.try_acquire()
    claim.release()


def test_cache_keys_hold_no_paths(tmp_path):
    def key(ocr_dir, evidence="The code is 7342."):
        return request_key(model="snapocr/ocr-qa",
                           messages=[{"role": "user", "content": "What is the code?"}],
                           params={}, frame_hashes=(), renderer_version="r1",
                           reader_inputs={"evidence": evidence, "answers": ["7342"],
                                          "ocr_cache_dir": ocr_dir})

    here, moved = str(tmp_path / "a" / "cache" / "ocr"), str(tmp_path / "copy" / "cache" / "ocr")
    assert key(here) == key(moved) == key(None)
    assert key(here, evidence="Another sentence.") != key(here)


def test_a_copied_results_folder_answers_from_its_cache(tmp_path):
    """The default offline reader (OCR), then the whole results folder copied elsewhere."""
    overrides = ["progress=false", "experiment=smoke", "strategies=[full,snapcompact]",
                 "shapes=[11on16-bw]"]
    first_root = tmp_path / "a"
    run_config(compose_eval([f"results_dir={first_root}", *overrides]), first_root / "run",
               base_dir=tmp_path, completion_fn=Counting())
    copy_root = tmp_path / "b"
    shutil.copytree(first_root, copy_root)
    shutil.rmtree(first_root)
    again = run_config(compose_eval([f"results_dir={copy_root}", *overrides]),
                       copy_root / "fresh", base_dir=tmp_path, completion_fn=(calls := Counting()))
    assert calls.calls == 0 and again.cache_hits == again.planned == 4
