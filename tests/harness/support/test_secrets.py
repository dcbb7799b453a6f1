"""No secret escapes: planted keys in every place a key can travel, then a grep of every output.

Keys are planted in the environment (``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``), in nested
model params (``extra_headers`` with a bearer token and a custom token header), in the
``api_base`` URL (user:password), on the command line of a refused run
(``+model.params.api_key=...``) and in a provider error body that echoes them back. After a
single run, a sweep and a failing run, ``grep -r`` of each planted value over the results
folder, and a search of everything printed, must find nothing. The redaction rules themselves
are checked case by case below.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.pipeline.run import main
from evals.store.records import iter_records
from evals.support.redaction import REDACTED, is_secret_name, redact, redact_data, secret_values
from evals.twins.fake_server import FakeChatServer, FakeReply

# Built from parts so that secret scanners do not flag this file.
PLANTED = {
    "env_openai": "sk-" + "plantedENVkey" + "0123456789abcdef",
    "env_aws": "wJalrXUtnFEMI" + "K7MDENGbPxRfiCYPLANTEDAWS",
    "header_bearer": "planted" + "BearerToken" + "9876543210",
    "header_custom": "planted" + "CustomHeader" + "55aa55aa55",
    "url_password": "planted" + "UrlPassword" + "31415926",
    "refused_param": "planted" + "RefusedParam" + "27182818",
}


def _run_cli(monkeypatch, capsys, args) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["snapcompact-eval", *args])
    code = 0
    try:
        main()
    except SystemExit as stop:
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_planted_keys_reach_no_file_and_no_output(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED["env_openai"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PLANTED["env_aws"])
    printed = []
    with FakeChatServer(latency_s=0.0) as server:
        url = server.api_base.replace("http://", f"http://user:{PLANTED['url_password']}@")
        common = ["model=fake", "dataset=tiny", "strategies=[full]", "reader=qa", "progress=false",
                  "max_items=1", f"model.params.api_base={server.api_base}"]
        headers = (f"+model.params.extra_headers={{Authorization:'Bearer "
                   f"{PLANTED['header_bearer']}',X-Custom-Token:{PLANTED['header_custom']}}}")
        code, out = _run_cli(monkeypatch, capsys, [*common, headers])
        printed.append(out)
        assert code == 0, out
        (records,) = tmp_path.glob("results/runs/default/records.jsonl")
        assert all(r.error is None for r in iter_records(records))

        # a sweep (multirun.yaml, one folder per job, Hydra's job log lines) with the same params
        code, out = _run_cli(monkeypatch, capsys,
                             ["-m", *common, headers, "max_questions_per_item=1,2"])
        printed.append(out)
        assert code == 0, out
        jobs = list(tmp_path.glob("results/runs/multirun/default/*/records.jsonl"))
        assert len(jobs) == 2 and all(r.error is None for f in jobs for r in iter_records(f))
        assert (tmp_path / "results/runs/multirun/multirun.yaml").is_file()

        # a password in the URL (litellm's HTTP client refuses it next to the bearer key, so
        # these requests fail: the URL still travels into configs, folder names and errors)
        code, out = _run_cli(monkeypatch, capsys, [*common, f"model.params.api_base={url}",
                                                   "max_attempts=1", "experiment_name=url",
                                                   "seed=9"])
        printed.append(out)
        assert code == 0, out
        (records,) = tmp_path.glob("results/runs/url/records.jsonl")
        assert all(r.error for r in iter_records(records))

        # the provider echoes back every key the request carries, in an error body
        echoed = " ".join(PLANTED[n] for n in ("env_openai", "env_aws", "header_bearer",
                                               "header_custom"))
        server.push(*[FakeReply.bad_request(f"invalid credentials: {echoed}")] * 2)
        code, out = _run_cli(monkeypatch, capsys,
                             [*common, headers, "experiment_name=errors", "seed=7"])
        printed.append(out)
        assert code == 0, out
        (records,) = tmp_path.glob("results/runs/errors/records.jsonl")
        errors = [r.error for r in iter_records(records)]
        assert len(errors) == 2 and all(e and REDACTED in e for e in errors)

        # a key given as a model param is refused, and names no folder
        code, out = _run_cli(monkeypatch, capsys,
                             [*common, f"+model.params.api_key={PLANTED['refused_param']}"])
        printed.append(out)
        assert code == 2 and "looks like a credential" in out
    printed.append(caplog.text)

    for name, value in PLANTED.items():
        grep = subprocess.run(["grep", "-r", "-l", "-F", value, str(tmp_path)],
                              capture_output=True, text=True, check=False)
        assert grep.returncode == 1, f"{name} found in {grep.stdout}"
        assert not any(value in p.name for p in tmp_path.rglob("*")), name
        assert all(value not in text for text in printed), name


@pytest.mark.parametrize("name,secret", [
    ("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("AWS_SESSION_TOKEN", True),
    ("Authorization", True), ("x-api-key", True), ("X-Custom-Token", True), ("apiKey", True),
    ("db_password", True), ("client_secret_value", True), ("GITHUB_TOKEN", True),
    ("max_tokens", False), ("text_token_method", False), ("PWD", False), ("PATH", False),
    ("reasoning_headroom_tokens", False), ("SSH_AUTH_SOCK", False), ("cache_key", False),
    ("temperature", False), ("monkey", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.parametrize("text,secret", [
    ("aws_secret_access_key = " + "abcdEFGHijklMNOP1234", "abcdEFGHijklMNOP1234"),
    ("https://bob:" + "hunter2hunter2" + "@db.example/x", "hunter2hunter2"),
    ("postgres://u:" + "p4ssw0rd-long" + "@h:5432/d", "p4ssw0rd-long"),
    ("GET /v1?alpha=1&token=" + "tok123tok123" + "&b=2", "tok123tok123"),
    ("Authorization: Bearer " + "abc.def.ghi123", "abc.def.ghi123"),
    ('{"x-api-key": "' + "k3y-value-xyz" + '"}', "k3y-value-xyz"),
    ("header X-Custom-Token=" + "customtok123", "customtok123"),
    ("key " + "sk-" + "abcdef0123456789" + " leaked", "abcdef0123456789"),
    ("password: " + "correcthorse", "correcthorse"),
])
def test_redact_catches_values_by_name_and_by_shape(text, secret):
    clean = redact(text)
    assert secret not in clean and REDACTED in clean


def test_redact_leaves_ordinary_text_alone():
    for text in ["max_tokens: 64", "the key point is recall", "token counts: 1,234",
                 "results/runs/default/model=mock", "text_token_method: estimate:chars/4",
                 "API keys are read from the environment only"]:
        assert redact(text) == text


def test_redact_removes_secret_environment_values(monkeypatch):
    value = "wJalrXUtnFEMI" + "K7MDENGbPxRfiCYEXAMPLE"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", value)
    assert redact(f"signature did not match for {value}!") == \
        f"signature did not match for {REDACTED}!"


def test_redact_data_walks_nested_config_without_recursion():
    deep: dict = {"leaf": "Bearer " + "deepsecret12345"}
    for _ in range(5000):
        deep = {"n": deep}
    cfg = {"model": {"params": {"extra_headers": {"Authorization": "Bearer " + "xyz123456789"},
                                "temperature": 0, "api_base": "http://u:" + "pw12345678" + "@h"}},
           "deep": deep}
    clean = redact_data(cfg)
    headers = clean["model"]["params"]["extra_headers"]
    assert headers == {"Authorization": REDACTED}
    assert clean["model"]["params"]["temperature"] == 0
    assert "pw12345678" not in clean["model"]["params"]["api_base"]
    node = clean["deep"]
    for _ in range(5000):
        node = node["n"]
    assert "deepsecret12345" not in node["leaf"]
    assert "xyz123456789" in secret_values(cfg) and "pw12345678" in secret_values(cfg)
