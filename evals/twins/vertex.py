"""Twins of Google Vertex AI: Gemini's ``generateContent``, Claude's ``rawPredict``, and the
OAuth token endpoint a service account trades a signed JWT at.

Why a token twin: litellm never sends a Vertex request without a Google access token. It builds
google-auth credentials (from ``GOOGLE_APPLICATION_CREDENTIALS``, ``vertex_credentials`` or the
default chain), and a service account's credentials sign a JWT with the account's RSA key and
post it to the ``token_uri`` named in the key file. A key file whose ``token_uri`` points at
``GoogleOAuthTwin`` therefore takes litellm's Vertex route end to end offline:
``throwaway_service_account`` writes one with a fresh RSA key (never a stored secret) and tells
the token twin to trust its public key.

- ``GoogleOAuthTwin``: ``POST /token``, the JWT-bearer grant as Google documents it for
  server-to-server applications (developers.google.com/identity/protocols/oauth2/
  service-account): form fields ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and
  ``assertion``; an RS256 JWT whose ``iss`` is the account, ``aud`` Google's token endpoint
  (``https://oauth2.googleapis.com/token``, whatever ``token_uri`` the request went to),
  ``scope`` the requested scopes, ``exp`` at most an hour after ``iat``; signed with a key the
  twin trusts. Answers ``{"access_token", "expires_in", "token_type": "Bearer"}``; refusals are
  ``{"error", "error_description"}`` with status 400.
- Access tokens are self-verifying (an HMAC under a per-process key, carrying the account's
  project and expiry), so any Vertex twin of this process accepts a token any token twin minted,
  as any Google front end accepts Google's: litellm caches credentials per process.
- ``VertexGeminiTwin``: ``POST /{v1,v1beta1}/projects/{project}/locations/{location}/publishers/
  google/models/{model}:generateContent`` (cloud.google.com/vertex-ai/generative-ai/docs/
  model-reference/inference). The body, its checks, image billing and usage are the Gemini
  API's (``GeminiTwin``: same ``GenerateContentRequest``, same ``usageMetadata``); the
  credential is ``Authorization: Bearer`` (401 UNAUTHENTICATED without a valid one) and the
  token's project must be the URL's (403 PERMISSION_DENIED). Limits: Google's Gemini row of
  pricing.toml (the preflight applies the same: ``google-vertex`` has no row of its own).
- ``VertexClaudeTwin``: ``POST /v1/projects/{project}/locations/{location}/publishers/anthropic/
  models/{model}:rawPredict`` (cloud.google.com/vertex-ai/generative-ai/docs/partner-models/
  claude): an Anthropic Messages body without ``model`` (the URL names it) and with
  ``anthropic_version: "vertex-2023-10-16"`` in the body instead of the header. Everything else,
  validation, image billing, usage, is ``AnthropicTwin``'s. Errors the model raises keep
  Anthropic's shape; the platform's own (auth, project, quota) are Google's
  ``{"error": {"code", "message", "status"}}``, and a rate limit is Vertex's 429
  RESOURCE_EXHAUSTED quota error, which states no wait.

All three are mounted at the server root (prefix ""), so ``api_base`` is the bare
``http://127.0.0.1:<port>``: litellm then appends the same ``/v1/projects/...`` path it would
send to ``https://{location}-aiplatform.googleapis.com``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from evals.twins.anthropic import AnthropicTwin
from evals.twins.gemini import GeminiTwin
from evals.twins.server import Exchange, Fault, Refusal, WireTwin

__all__ = ["ANTHROPIC_VERSION", "GoogleOAuthTwin", "VertexClaudeTwin", "VertexGeminiTwin",
           "throwaway_service_account"]

#: The ``anthropic_version`` a rawPredict body must carry on Vertex.
ANTHROPIC_VERSION = "vertex-2023-10-16"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: The ``aud`` of the assertion: Google's token endpoint, wherever the key file's token_uri points
TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
TOKEN_LIFETIME_S = 3599  # what Google's token endpoint grants

_TOKEN_KEY = secrets.token_bytes(32)  # per process: tokens never outlive the run
_TOKEN = re.compile(r"^ya29\.twin\.(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9])\.(?P<exp>\d+)\."
                    r"(?P<nonce>[A-Za-z0-9_-]+)\.(?P<mac>[0-9a-f]{64})$")
_VERSION = "{version:v1|v1beta1}"
_LOCATION_PATH = "/projects/{project}/locations/{location}/publishers"


def _mac(payload: str) -> str:
    return hmac.new(_TOKEN_KEY, payload.encode(), hashlib.sha256).hexdigest()


def mint_access_token(project: str, lifetime_s: int = TOKEN_LIFETIME_S) -> str:
    """An access token for ``project``, valid for ``lifetime_s`` in every twin of this process."""
    payload = f"ya29.twin.{project}.{int(time.time()) + lifetime_s}.{secrets.token_urlsafe(24)}"
    return f"{payload}.{_mac(payload)}"


def token_project(headers: Any) -> str:
    """The project of the request's bearer token; a 401 ``Refusal`` when there is none valid."""
    auth = str(headers.get("authorization", ""))
    if not auth:
        raise Refusal(401, "UNAUTHENTICATED",
                      "Request is missing required authentication credential. Expected OAuth 2 "
                      "access token, login cookie or other valid authentication credential.")
    scheme, _, token = auth.partition(" ")
    token = token.strip()
    match = _TOKEN.match(token) if scheme.lower() == "bearer" else None
    signed_part = token.rpartition(".")[0]
    if match is None or not hmac.compare_digest(match["mac"], _mac(signed_part)) \
            or int(match["exp"]) < time.time():
        raise Refusal(401, "UNAUTHENTICATED",
                      "Request had invalid authentication credentials. Expected OAuth 2 access "
                      "token, login cookie or other valid authentication credential.")
    return match["project"]


def _check_project(headers: Any, match: Any, model: str) -> None:
    project = token_project(headers)
    if match["project"] != project:
        raise Refusal(403, "PERMISSION_DENIED",
                      f"Permission 'aiplatform.endpoints.predict' denied on resource "
                      f"'//aiplatform.googleapis.com/projects/{match['project']}/locations/"
                      f"{match['location']}/publishers/.../models/{model}' (or it may not "
                      "exist).")


def _google_error(refusal: Refusal) -> tuple[int, dict[str, Any], dict[str, str]]:
    return refusal.status, {"error": {"code": refusal.status, "message": refusal.message,
                                      "status": refusal.kind}}, {}


def _quota_error(base_model: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return 429, {"error": {
        "code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "Quota exceeded for aiplatform.googleapis.com/"
                   f"online_prediction_requests_per_base_model with base model: {base_model}. "
                   "Please submit a quota increase request."}}, {}


# --------------------------------------------------------------------------------------------
# the token endpoint


@dataclass
class GoogleOAuthTwin(WireTwin):
    name: str = "google-oauth"
    prefix: str = "/google-oauth2"
    #: client_email -> {private_key_id: public key} of the accounts whose JWTs the twin accepts
    trusted: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the project each trusted account belongs to (the project of the tokens it gets)
    projects: dict[str, str] = field(default_factory=dict)

    def routes(self):
        return [("POST", "/token", self.token)]

    def trust(self, client_email: str, key_id: str, public_key: Any, project: str) -> None:
        with self._lock:
            self.trusted.setdefault(client_email, {})[key_id] = public_key
            self.projects[client_email] = project

    def error_body(self, refusal: Refusal):
        return refusal.status, {"error": refusal.kind, "error_description": refusal.message}, {}

    def fault_reply(self, fault: Fault):
        return 503, {"error": "temporarily_unavailable",
                     "error_description": "The service is currently unavailable."}, {}

    async def _serve(self, request: Any, endpoint: Any) -> Any:
        """Form-encoded, not JSON: parse it here and answer in OAuth's shape."""
        from aiohttp import web

        raw = await request.read()
        form = {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode("utf-8", "replace")).items()}
        try:
            reply, email = self.token(form)
        except Refusal as refusal:
            status, body, headers = self.error_body(refusal)
            self._record(Exchange(self.name, request.path, None, status, refusal.kind,
                                  refusal.message, request_bytes=len(raw)))
            return web.json_response(body, status=status, headers=headers)
        self._record(Exchange(self.name, request.path, email, 200, request_bytes=len(raw)))
        return web.json_response(reply)

    def token(self, form: dict[str, str]) -> tuple[dict[str, Any], str]:
        grant = form.get("grant_type")
        if grant != JWT_BEARER:
            raise Refusal(400, "unsupported_grant_type", f"Invalid grant_type: {grant or ''}")
        header, claims, signing_input, signature = _split_jwt(form.get("assertion", ""))
        if header.get("alg") != "RS256":
            raise Refusal(400, "invalid_grant", "Invalid JWT: the algorithm must be RS256.")
        email = claims.get("iss")
        keys = self.trusted.get(email, {})
        key = keys.get(header.get("kid")) if header.get("kid") else None
        candidates = [key] if key is not None else list(keys.values())
        if not any(_verifies(k, signing_input, signature) for k in candidates):
            raise Refusal(400, "invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") != TOKEN_AUDIENCE:
            raise Refusal(400, "invalid_grant", "Invalid JWT: Failed audience check. The right "
                          f"audience is {TOKEN_AUDIENCE}")
        iat, exp, now = claims.get("iat"), claims.get("exp"), time.time()
        if not (isinstance(iat, int) and isinstance(exp, int)) or exp - iat > 3600 \
                or iat > now + 300 or exp < now:
            raise Refusal(400, "invalid_grant",
                          "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                          "reasonable timeframe. Check your iat and exp values in the JWT claim.")
        scopes = str(claims.get("scope", "")).split()
        if not scopes:
            raise Refusal(400, "invalid_scope",
                          "Invalid OAuth scope or ID token audience provided.")
        return {"access_token": mint_access_token(self.projects[email]),
                "expires_in": TOKEN_LIFETIME_S, "token_type": "Bearer"}, email


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _split_jwt(assertion: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    parts = assertion.split(".")
    try:
        if len(parts) != 3:
            raise ValueError("not three parts")
        header, claims = (json.loads(_b64url(p)) for p in parts[:2])
        signature = _b64url(parts[2])
    except ValueError:
        raise Refusal(400, "invalid_grant", "Invalid JWT: the assertion is not a JWT.") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Refusal(400, "invalid_grant", "Invalid JWT: the assertion is not a JWT.")
    return header, claims, f"{parts[0]}.{parts[1]}".encode(), signature


def _verifies(public_key: Any, signing_input: bytes, signature: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        public_key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def throwaway_service_account(directory: Path, oauth: GoogleOAuthTwin, token_uri: str,
                              project: str) -> Path:
    """Write a service-account key file with a fresh RSA key whose ``token_uri`` is the twin's;
    the twin trusts its public key. Returns the file's path (mode 600). The key exists only for
    this run: it is generated here and written nowhere else."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_id = secrets.token_hex(20)
    email = f"twin-runner@{project}.iam.gserviceaccount.com"
    oauth.trust(email, key_id, key.public_key(), project)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode("ascii")
    info = {"type": "service_account", "project_id": project, "private_key_id": key_id,
            "private_key": pem, "client_email": email, "client_id": str(secrets.randbits(64)),
            "token_uri": token_uri, "universe_domain": "googleapis.com"}
    path = Path(directory) / "twin-service-account.json"
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        json.dump(info, out)
    return path


# --------------------------------------------------------------------------------------------
# the model endpoints


@dataclass
class VertexGeminiTwin(GeminiTwin):
    name: str = "vertex"
    prefix: str = ""
    limits_provider: ClassVar[str | None] = "google"

    def routes(self):
        return [("POST", f"/{_VERSION}{_LOCATION_PATH}/google/models/{{model}}:generateContent",
                 self.predict)]

    def check_auth(self, headers, query) -> None:
        token_project(headers)

    def error_body(self, refusal: Refusal):
        if refusal.kind in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            return _google_error(refusal)
        return super().error_body(refusal)

    def fault_reply(self, fault: Fault):
        if fault.kind == "overloaded":
            return super().fault_reply(fault)
        return _quota_error("gemini")

    def predict(self, request: Any, body: dict[str, Any], match: Any):
        _check_project(request.headers, match, match["model"])
        return self.generate(request, body, match)


@dataclass
class VertexClaudeTwin(AnthropicTwin):
    name: str = "vertex-anthropic"
    prefix: str = ""
    limits_provider: ClassVar[str | None] = "anthropic"

    def routes(self):
        return [("POST", f"/v1{_LOCATION_PATH}/anthropic/models/{{model}}:rawPredict",
                 self.raw_predict)]

    def check_auth(self, headers, query) -> None:
        token_project(headers)

    def error_body(self, refusal: Refusal):
        if refusal.kind in ("UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND"):
            return _google_error(refusal)
        return super().error_body(refusal)

    def fault_reply(self, fault: Fault):
        if fault.kind == "overloaded":  # the model's own overload passes through in its shape
            return super().fault_reply(fault)
        return _quota_error("anthropic-claude")

    def raw_predict(self, request: Any, body: dict[str, Any], match: Any):
        model = match["model"]
        _check_project(request.headers, match, model)
        if not model.startswith("claude"):
            raise Refusal(404, "NOT_FOUND", f"Publisher Model `projects/{match['project']}/"
                          f"locations/{match['location']}/publishers/anthropic/models/{model}` "
                          "not found.")
        if "model" in body:
            raise Refusal(400, "invalid_request_error",
                          "model: Extra inputs are not permitted (Vertex names the model in the "
                          "URL)")
        version = body.get("anthropic_version")
        if version != ANTHROPIC_VERSION:
            raise Refusal(400, "invalid_request_error",
                          f"anthropic_version: Input should be '{ANTHROPIC_VERSION}'"
                          + ("" if version is None else f" (got {version!r})"))
        rest = {k: v for k, v in body.items() if k != "anthropic_version"}
        return self.messages(request, {**rest, "model": model}, match)
