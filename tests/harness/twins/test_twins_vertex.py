"""Vertex AI offline: google-auth's token exchange and litellm's two Vertex wires, against twins.

The credential is a service-account key file generated in the test (a fresh RSA key; nothing
stored in the repository) whose ``token_uri`` is the token twin. Expectations come from outside
the code under test: google-auth itself signs the JWT and reads the token reply, litellm builds
the Vertex URLs and bodies, and the image tokens are the providers' documented figures (Gemini:
258 for an image within 384x384; Claude: ceil(w/28) x ceil(h/28) for 560x280 = 20 x 10).
The smoke runs of the three Vertex model configs are in ``test_twins.py`` (every real config).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import time
from collections import Counter, defaultdict

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from twin_images import b64, png

from evals.send.client import EvalClient, Request, RetryPolicy
from evals.send.preflight import PreflightError, check_routes
from evals.twins import Fault
from evals.twins.smoke import all_twins, run_against_twin, twin_for
from evals.twins.vertex import (
    ANTHROPIC_VERSION,
    CLOUD_PLATFORM_SCOPE,
    GoogleOAuthTwin,
    throwaway_service_account,
)

PROJECT = "twin-project"
LOCATION = "us-central1"
GEMINI_PATH = (f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/"
               "gemini-2.5-flash:generateContent")
CLAUDE_PATH = (f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/anthropic/models/"
               "claude-sonnet-4-5@20250929:rawPredict")




#: twin -> accepted / refused / faults over this module (printed at the end with -s)
TALLY: dict[str, Counter] = defaultdict(Counter)


@pytest.fixture(scope="module")
def twins():
    with all_twins() as server:
        yield server
    print("\nrequests per twin in this module: " + "; ".join(
        f"{name} {dict(counts)}" for name, counts in sorted(TALLY.items())))


@pytest.fixture
def server(twins):
    twins.reset()
    yield twins
    for exchange in twins.exchanges():
        TALLY[exchange.twin]["accepted" if exchange.accepted else "faults" if exchange.error_kind
                             in ("rate_limit", "overloaded") else "refused"] += 1


def token_uri(server) -> str:
    return server.api_base("google-oauth") + "/token"


@pytest.fixture
def key_file(server, tmp_path):
    return throwaway_service_account(tmp_path, server["google-oauth"], token_uri(server), PROJECT)


def google_credentials(path):
    from google.oauth2 import service_account

    return service_account.Credentials.from_service_account_file(
        str(path), scopes=[CLOUD_PLATFORM_SCOPE])


def refresh(credentials) -> None:
    import google.auth.transport.requests

    credentials.refresh(google.auth.transport.requests.Request())


@pytest.fixture
def bearer(key_file):
    credentials = google_credentials(key_file)
    refresh(credentials)
    return {"Authorization": f"Bearer {credentials.token}"}


# --------------------------------------------------------------------------------------------
# the token exchange, driven by google-auth itself


def test_google_auth_trades_the_throwaway_key_for_a_token_at_the_twin(server, key_file):
    info = json.loads(key_file.read_text())
    assert info["type"] == "service_account" and info["token_uri"] == token_uri(server)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600  # a key file: owner only
    credentials = google_credentials(key_file)
    before = time.time()
    refresh(credentials)
    assert credentials.token.startswith("ya29.") and credentials.valid
    # google-auth keeps the expiry it was given (3599 s), less its own refresh margin
    lifetime = credentials.expiry.timestamp() - before
    assert 3000 < lifetime <= 3600 + 5
    (exchange,) = server["google-oauth"].log
    assert exchange.accepted and exchange.model == info["client_email"]


def _signed(key_file, **claims) -> str:
    """A JWT-bearer assertion signed with the key file's key by google-auth's own signer."""
    from google.auth import crypt, jwt

    info = json.loads(key_file.read_text())
    now = int(time.time())
    payload = {"iss": info["client_email"], "aud": "https://oauth2.googleapis.com/token",
               "scope": CLOUD_PLATFORM_SCOPE, "iat": now, "exp": now + 3600, **claims}
    signer = crypt.RSASigner.from_service_account_info(info)
    return jwt.encode(signer, payload).decode("ascii")


@pytest.mark.parametrize(("case", "error", "needle"), [
    ("untrusted key", "invalid_grant", "Invalid JWT Signature."),
    ("long-lived", "invalid_grant", "Token must be a short-lived token (60 minutes)"),
    ("audience", "invalid_grant", "Failed audience check"),
    ("grant type", "unsupported_grant_type", "Invalid grant_type: client_credentials"),
    ("no scope", "invalid_scope", "Invalid OAuth scope"),
])
def test_the_token_twin_refuses_in_googles_oauth_shape(server, tmp_path, key_file, case, error,
                                                      needle):
    import httpx

    form = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer"}
    if case == "untrusted key":  # a key file nobody registered with this token endpoint
        stranger = tmp_path / "stranger"
        stranger.mkdir()
        other = throwaway_service_account(stranger, GoogleOAuthTwin(), token_uri(server), PROJECT)
        form["assertion"] = _signed(other)
    elif case == "long-lived":
        form["assertion"] = _signed(key_file, exp=int(time.time()) + 7200)
    elif case == "audience":
        form["assertion"] = _signed(key_file, aud=token_uri(server))
    elif case == "grant type":
        form = {"grant_type": "client_credentials", "assertion": _signed(key_file)}
    elif case == "no scope":
        form["assertion"] = _signed(key_file, scope="")
    reply = httpx.post(token_uri(server), data=form, timeout=30)
    assert reply.status_code == 400
    assert reply.json()["error"] == error and needle in reply.json()["error_description"]
    assert [e.status for e in server["google-oauth"].log] == [400]


def test_google_auth_reports_the_twins_refusal(server, tmp_path):
    from google.auth.exceptions import RefreshError

    path = throwaway_service_account(tmp_path, GoogleOAuthTwin(), token_uri(server), PROJECT)
    with pytest.raises(RefreshError, match="invalid_grant: Invalid JWT Signature"):
        refresh(google_credentials(path))


# --------------------------------------------------------------------------------------------
# the two model wires: Vertex's auth and paths, the Gemini and Anthropic twins' checks and bills


def gemini_body(*images, mime="image/png"):
    parts = [{"inline_data": {"mime_type": mime, "data": b64(i)}} for i in images]
    return {"contents": [{"role": "user", "parts": [*parts, {"text": "What does it say?"}]}]}


def claude_body(*images, **extra):
    blocks = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": b64(i)}} for i in images]
    return {"anthropic_version": ANTHROPIC_VERSION, "max_tokens": 16, "messages": [
        {"role": "user", "content": [*blocks, {"type": "text", "text": "What does it say?"}]}],
        **extra}


def post(server, path, body, headers):
    import httpx

    return httpx.post(server.api_base("vertex") + path, json=body, headers=headers, timeout=60)


def test_vertex_gemini_answers_with_geminis_usage(server, bearer):
    reply = post(server, GEMINI_PATH, gemini_body(png(384, 384)), bearer)
    assert reply.status_code == 200, reply.text
    usage = reply.json()["usageMetadata"]
    image = [d for d in usage["promptTokensDetails"] if d["modality"] == "IMAGE"]
    assert image == [{"modality": "IMAGE", "tokenCount": 258}]  # both sides <= 384: 258
    (exchange,) = server["vertex"].log
    assert exchange.image_sizes == ((384, 384),)
    assert usage["promptTokenCount"] == exchange.text_tokens + 258


def test_vertex_claude_answers_with_anthropics_usage(server, bearer):
    reply = post(server, CLAUDE_PATH, claude_body(png(560, 280)), bearer)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["type"] == "message" and body["model"] == "claude-sonnet-4-5@20250929"
    (exchange,) = server["vertex-anthropic"].log
    assert exchange.image_tokens == (20 * 10,)
    assert body["usage"]["input_tokens"] == exchange.text_tokens + 200


FORGED = "ya29.twin.twin-project.9999999999.forged." + "0" * 64


@pytest.mark.parametrize("path", [GEMINI_PATH, CLAUDE_PATH], ids=["gemini", "claude"])
@pytest.mark.parametrize(("case", "status", "grpc", "needle"), [
    ("no token", 401, "UNAUTHENTICATED", "missing required authentication credential"),
    ("forged token", 401, "UNAUTHENTICATED", "invalid authentication credentials"),
    ("api key", 401, "UNAUTHENTICATED", "missing required authentication credential"),
    ("other project", 403, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict'"),
])
def test_vertex_refuses_without_a_token_for_the_project(server, bearer, path, case, status, grpc,
                                                         needle):
    headers = {"no token": {}, "forged token": {"Authorization": f"Bearer {FORGED}"},
               "api key": {"x-goog-api-key": "twin-dummy-key"}, "other project": bearer}[case]
    if case == "other project":
        path = path.replace(f"/projects/{PROJECT}/", "/projects/someone-elses-project/")
    body = gemini_body(png(64, 64)) if "google" in path else claude_body(png(64, 64))
    reply = post(server, path, body, headers)
    assert reply.status_code == status
    assert reply.json()["error"]["status"] == grpc and needle in reply.json()["error"]["message"]


@pytest.mark.parametrize(("case", "status", "shape", "needle"), [
    ("no anthropic_version", 400, "anthropic", "anthropic_version: Input should be"),
    ("model in the body", 400, "anthropic", "model: Extra inputs are not permitted"),
    ("edge", 400, "anthropic", "8000 pixels (max_edge)"),
    ("not a Claude", 404, "google", "Publisher Model"),
])
def test_vertex_claude_refuses_like_anthropic_behind_vertex(server, bearer, case, status, shape,
                                                             needle):
    path, body = CLAUDE_PATH, claude_body(png(64, 64))
    if case == "no anthropic_version":
        body.pop("anthropic_version")
    elif case == "model in the body":
        body["model"] = "claude-sonnet-4-5"
    elif case == "edge":
        body = claude_body(png(8001, 8))
    elif case == "not a Claude":
        path = path.replace("claude-sonnet-4-5@20250929", "llama-3")
    reply = post(server, path, body, bearer)
    assert reply.status_code == status
    error = reply.json()
    if shape == "anthropic":
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        assert needle in error["error"]["message"]
    else:
        assert error["error"]["status"] == "NOT_FOUND" and needle in error["error"]["message"]


@pytest.mark.parametrize(("case", "needle"), [
    ("request bytes", "max_request_bytes"),
    ("mime", "does not match the data"),
])
def test_vertex_gemini_refuses_like_gemini(server, bearer, case, needle):
    body = {"request bytes": lambda: gemini_body(*[png(1300, 1300, noise=True)] * 3),  # ~20.4 MB
            "mime": lambda: gemini_body(png(64, 64), mime="image/webp")}[case]()
    reply = post(server, GEMINI_PATH, body, bearer)
    assert reply.status_code == 400
    assert reply.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert needle in reply.json()["error"]["message"]


# --------------------------------------------------------------------------------------------
# through litellm and the client: the token, the URL, the usage; quota and overload retried

ROUTES = {"vertex": "vertex_ai/gemini-2.5-flash",
          "vertex-anthropic": "vertex_ai/claude-sonnet-4-5@20250929"}


@pytest.fixture
def vertex_env(monkeypatch, key_file):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("VERTEXAI_PROJECT", PROJECT)
    monkeypatch.setenv("VERTEXAI_LOCATION", LOCATION)


def _ask(server, twin: str, slept: list[float]):
    client = EvalClient(cache=None, renderer_version="twin-test",
                        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02))

    async def record(seconds: float) -> None:
        slept.append(seconds)

    client._sleep = record
    image = png(512, 200)
    request = Request(model=ROUTES[twin], messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(image)}},
        {"type": "text", "text": "What does it say?"}]}],
        params={"api_base": server.api_base(twin), "max_tokens": 32},
        frame_hashes=(hashlib.sha256(image).hexdigest(),))
    return asyncio.run(client.complete(request))


@pytest.mark.parametrize("twin", list(ROUTES))
def test_litellms_vertex_route_reaches_the_twin(server, vertex_env, twin):
    response = _ask(server, twin, [])
    (exchange,) = server[twin].log
    assert response.ok, response.error
    assert response.answer == "echo: What does it say?"
    assert (response.prompt_tokens, response.completion_tokens) == \
        (exchange.prompt_tokens, exchange.completion_tokens)
    assert exchange.path.startswith(f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/")
    assert exchange.image_sizes == ((512, 200),)


@pytest.mark.parametrize("twin", list(ROUTES))
@pytest.mark.parametrize("fault", [Fault.rate_limited(None), Fault.overloaded()],
                         ids=["quota", "overloaded"])
def test_vertex_quota_and_overload_are_retried_with_backoff(server, vertex_env, twin, fault):
    server[twin].push(fault)
    slept: list[float] = []
    response = _ask(server, twin, slept)
    assert response.ok and response.attempts == 2
    assert server[twin].log[0].status in (429, 503, 529) and server[twin].log[1].accepted
    assert len(slept) == 1 and 0.005 <= slept[0] <= 0.02  # Vertex names no wait: the policy's


def test_a_vertex_run_leaves_no_credential_in_its_results(server, tmp_path):
    results = tmp_path / "results"
    run_against_twin("vertex-claude-sonnet-4-5", server, results,
                     overrides=["model.rate_limit_rps=null"])
    assert len(server["vertex-anthropic"].accepted()) == 8
    written = [p for p in results.rglob("*") if p.is_file()]
    assert any("records.jsonl" == p.name for p in written)
    assert any("responses" in p.parts for p in written)  # the response cache is scanned too
    assert not any(p.name.endswith("service-account.json") for p in written)
    for path in written:
        data = path.read_bytes()
        assert b"PRIVATE KEY" not in data and b"ya29." not in data, path


def test_every_vertex_config_has_its_twin():
    assert {c: twin_for(c) for c in ("vertex-gemini-2.5-flash", "vertex-gemini-3-flash",
                                     "vertex-claude-sonnet-4-5")} == {
        "vertex-gemini-2.5-flash": "vertex", "vertex-gemini-3-flash": "vertex",
        "vertex-claude-sonnet-4-5": "vertex-anthropic"}


def test_without_google_auth_a_vertex_run_is_refused_before_sending(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("google") else real(name, *a))
    with pytest.raises(PreflightError, match="vertex_ai route needs google-auth"):
        check_routes(["vertex_ai/gemini-2.5-flash"])
    check_routes(["gemini/gemini-2.5-flash"])  # the AI Studio route needs no google-auth
