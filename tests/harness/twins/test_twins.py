"""The real-provider path, offline: wire twins of Anthropic, OpenAI, Gemini and Bedrock.

Three layers, each against expectations that do not come from the code under test:
- the twins' image rules reproduce the providers' own worked examples;
- each twin accepts what the provider documents and refuses the rest with the provider's error
  shape and status (raw HTTP), and its rate-limit replies carry the provider's headers, which
  the client's backoff honours (through litellm);
- every model config that calls a real provider runs ``experiment=smoke`` end to end through
  litellm against its twin: every row carries the usage the twin reported, and the drift of
  ``snapcompact.billing``'s prediction against the twin's independent reading is pinned.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter, defaultdict

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from twin_images import b64, png

from evals.send.client import EvalClient, Request, RetryPolicy, retry_after_seconds
from evals.send.preflight import PreflightError, check_request
from evals.twins import Fault
from evals.twins.smoke import (
    all_twins,
    drift_rows,
    format_drift_table,
    real_provider_configs,
    run_against_twin,
    twin_for,
)
from evals.twins.vision import (
    anthropic_image_tokens,
    gemini_image_tokens,
    openai_image_tokens,
)

KEY = "twin-test-" + "dummy-not-a-key-0000"  # split: not a real key




def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{b64(data)}"


#: twin -> accepted / refused / faults, over the whole module (printed at the end with -s)
TALLY: dict[str, Counter] = defaultdict(Counter)


def _tally(server) -> None:
    for exchange in server.exchanges():
        kind = "accepted" if exchange.accepted else (
            "faults" if exchange.error_kind in ("rate_limit", "overloaded") else "refused")
        TALLY[exchange.twin][kind] += 1


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
    _tally(twins)


# --------------------------------------------------------------------------------------------
# the twins' reading of the docs, on the providers' worked examples


@pytest.mark.parametrize(("size", "detail", "tokens"), [
    ((1024, 1024), "high", 765),    # "scale down to 768x768 ... 170 * 4 + 85 = 765"
    ((2048, 4096), "high", 1105),   # "1024x2048 ... 768x1536 ... 170 * 6 + 85 = 1105"
    ((4096, 8192), "low", 85),      # "low detail images are a fixed cost"
])
def test_openai_tile_rule_reproduces_the_documented_examples(size, detail, tokens):
    assert openai_image_tokens("gpt-4o", *size, detail)[0] == tokens


def test_openai_tile_rule_prices_per_model():
    # GPT-5: base 70, tile 140 (same 4 tiles as the 1024x1024 example)
    assert openai_image_tokens("gpt-5", 1024, 1024, "high")[0] == 70 + 4 * 140
    assert openai_image_tokens("gpt-4.1", 1024, 1024, "auto")[0] == 85 + 4 * 170


@pytest.mark.parametrize(("size", "visual_tokens"), [
    # the vision page's "fits without resizing" sizes, ceil(w/28) * ceil(h/28) each
    ((1092, 1092), 39 * 39), ((951, 1268), 34 * 46), ((896, 1344), 32 * 48),
    ((819, 1456), 30 * 52), ((784, 1568), 28 * 56), ((200, 200), 8 * 8),
])
def test_anthropic_patch_rule_on_the_documented_sizes(size, visual_tokens):
    tokens, seen = anthropic_image_tokens("claude-sonnet-4-5", *size)
    assert (tokens, seen) == (visual_tokens, size)


def test_anthropic_resizes_past_native_resolution_and_high_res_tier_does_not():
    tokens, seen = anthropic_image_tokens("claude-sonnet-4-5", 3000, 2000)
    assert max(seen) <= 1568 and tokens <= 1600 and seen[0] / seen[1] == pytest.approx(1.5, 0.01)
    assert anthropic_image_tokens("claude-opus-4-7", 1932, 1932) == (69 * 69, (1932, 1932))


@pytest.mark.parametrize(("model", "size", "level", "tokens"), [
    ("gemini-2.5-flash", (384, 384), None, 258),        # both sides <= 384: 258
    ("gemini-2.5-flash", (1536, 768), None, 2 * 258),   # 768 px tiles, 258 each
    ("gemini-3-flash-preview", (512, 84), None, 1120),  # Gemini 3 default for images: HIGH
    ("gemini-3-flash-preview", (512, 84), "MEDIA_RESOLUTION_LOW", 280),
])
def test_gemini_rules(model, size, level, tokens):
    assert gemini_image_tokens(model, *size, level)[0] == tokens


# --------------------------------------------------------------------------------------------
# the wire: accepted and refused as the provider documents, in the provider's error shape


def post(server, twin: str, path: str, body: dict, headers: dict | None = None):
    import httpx

    return httpx.post(server.api_base(twin) + path, json=body, headers=headers or {},
                      timeout=60)


ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}


def anthropic_body(*blocks, model="claude-sonnet-4-5", **extra):
    content = [*blocks, {"type": "text", "text": "What does it say?"}]
    return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": content}],
            **extra}


def anthropic_image(data: bytes, media: str = "image/png") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": b64(data)}}


def test_anthropic_twin_accepts_a_documented_request_and_bills_its_image(server):
    reply = post(server, "anthropic", "/v1/messages",
                 anthropic_body(anthropic_image(png(560, 280))), ANTHROPIC_HEADERS)
    assert reply.status_code == 200
    body = reply.json()
    assert body["type"] == "message" and body["content"][0]["type"] == "text"
    (exchange,) = server["anthropic"].log
    assert exchange.image_tokens == (20 * 10,) and exchange.image_sizes == ((560, 280),)
    assert body["usage"]["input_tokens"] == exchange.text_tokens + 200


@pytest.mark.parametrize(("case", "status", "kind", "needle"), [
    ("no key", 401, "authentication_error", "x-api-key"),
    ("media type", 400, "invalid_request_error", "does not match the provided media type"),
    ("truncated", 400, "invalid_request_error", "could not process image"),
    ("edge", 400, "invalid_request_error", "8000 pixels (max_edge)"),
    ("many edges", 400, "invalid_request_error", "more than 20 images: 2000 pixels"),
    ("count", 400, "invalid_request_error", "101 > 100 per request (max_images)"),
    ("image bytes", 400, "invalid_request_error", "(max_image_bytes)"),
    ("opus temperature", 400, "invalid_request_error", "temperature is deprecated"),
])
def test_anthropic_twin_refuses_in_anthropics_error_shape(server, case, status, kind, needle):
    small = png(64, 64)
    headers, body = ANTHROPIC_HEADERS, anthropic_body(anthropic_image(small))
    if case == "no key":
        headers = {"anthropic-version": "2023-06-01"}
    elif case == "media type":
        body = anthropic_body(anthropic_image(small, "image/jpeg"))
    elif case == "truncated":
        body = anthropic_body(anthropic_image(small[: len(small) // 2]))
    elif case == "edge":
        body = anthropic_body(anthropic_image(png(8001, 8)))
    elif case == "many edges":
        body = anthropic_body(*[anthropic_image(png(2001, 8))] * 21)
    elif case == "count":
        body = anthropic_body(*[anthropic_image(small)] * 101)
    elif case == "image bytes":
        body = anthropic_body(anthropic_image(png(1300, 1300, noise=True)))  # ~6.8 MB base64
    elif case == "opus temperature":
        body = anthropic_body(anthropic_image(small), model="claude-opus-4-7", temperature=0)
    reply = post(server, "anthropic", "/v1/messages", body, headers)
    assert reply.status_code == status
    error = reply.json()
    assert error["type"] == "error" and error["error"]["type"] == kind
    assert needle in error["error"]["message"]
    assert [e.status for e in server["anthropic"].log] == [status]


def openai_body(*urls, model="gpt-4.1", detail="high", **extra):
    parts = [{"type": "image_url", "image_url": {"url": u, "detail": detail}} for u in urls]
    return {"model": model, "messages": [{"role": "user", "content": [
        *parts, {"type": "text", "text": "What does it say?"}]}], **extra}


@pytest.mark.parametrize(("twin", "body", "status", "code", "needle"), [
    ("openai", openai_body(data_url(png(64, 64)), detail="original"), 400, "invalid_value",
     "'original' is not supported"),
    ("openai", openai_body(data_url(png(64, 64)), model="gpt-5", temperature=0), 400,
     "unsupported_value", "Only the default (1) value is supported"),
    ("openai", openai_body(data_url(png(64, 64)), model="gpt-5", max_tokens=5), 400,
     "unsupported_parameter", "Use 'max_completion_tokens' instead"),
    ("openai", openai_body(data_url(png(64, 64), "image/jpeg")), 400, "invalid_image_format",
     "the bytes are image/png"),
    ("openai", openai_body(data_url(png(64, 64)), model="gpt-9000-vision"), 404,
     "model_not_found", "does not exist"),
    ("openrouter", openai_body(*[data_url(png(64, 64))] * 9, model="anthropic/claude-sonnet-4.5",
                               detail="auto"), 400, None, "9 > 8 per request (max_images)"),
])
def test_openai_compatible_twins_refuse_in_openais_error_shape(server, twin, body, status, code,
                                                               needle):
    reply = post(server, twin, "/chat/completions", body, {"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == status
    error = reply.json()["error"]
    assert error["code"] == code and needle in error["message"]
    assert error["type"] == "invalid_request_error"


def test_openai_twin_wants_a_bearer_key(server):
    reply = post(server, "openai", "/chat/completions", openai_body(data_url(png(64, 64))))
    assert reply.status_code == 401 and "API key" in reply.json()["error"]["message"]


def gemini_body(*images, mime="image/png"):
    parts = [{"inline_data": {"mime_type": mime, "data": b64(i)}} for i in images]
    return {"contents": [{"role": "user", "parts": [*parts, {"text": "What does it say?"}]}]}


@pytest.mark.parametrize(("case", "status", "grpc", "needle"), [
    ("no key", 403, "PERMISSION_DENIED", "API Key"),
    ("mime", 400, "INVALID_ARGUMENT", "does not match the data"),
    ("request bytes", 400, "INVALID_ARGUMENT", "max_request_bytes"),
    ("model", 404, "NOT_FOUND", "is not found"),
])
def test_gemini_twin_refuses_in_googles_error_shape(server, case, status, grpc, needle):
    headers = {"x-goog-api-key": KEY}
    model, body = "gemini-2.5-flash", gemini_body(png(64, 64))
    if case == "no key":
        headers = {}
    elif case == "mime":
        body = gemini_body(png(64, 64), mime="image/webp")
    elif case == "request bytes":
        body = gemini_body(*[png(1300, 1300, noise=True)] * 3)  # ~20.4 MB of base64
    elif case == "model":
        model = "palm-2"
    reply = post(server, "gemini", f"/models/{model}:generateContent", body, headers)
    assert reply.status_code == status
    assert reply.json()["error"] == {**reply.json()["error"], "code": status, "status": grpc}
    assert needle in reply.json()["error"]["message"]


def test_bedrock_twin_refuses_an_image_over_its_limit(server):
    import httpx

    body = {"messages": [{"role": "user", "content": [
        {"image": {"format": "png", "source": {"bytes": b64(png(1200, 1200, noise=True))}}},
        {"text": "What does it say?"}]}]}
    reply = httpx.post(server.api_base("bedrock") + "/model/anthropic.claude-x/converse", json=body,
                       headers={"Authorization": "AWS4-HMAC-SHA256 Credential=x"}, timeout=60)
    assert reply.status_code == 400
    assert reply.headers["x-amzn-ErrorType"] == "ValidationException"
    assert "(max_image_bytes)" in reply.json()["message"]


# --------------------------------------------------------------------------------------------
# tool use on the wire: a conversation with tool calls is accepted as each provider documents it,
# malformed tool structure is refused in the provider's error shape


def o200k(text: str) -> int:
    import tiktoken

    return len(tiktoken.get_encoding("o200k_base").encode(text))


def claude_v3(text: str) -> int:
    """Anthropic's count of a text piece: the claude-v3 tokenizer (ctok 3.0), which the coding
    agent uses for Claude lines and which the Claude twins bill with."""
    import ctok

    # ctok counts a text as one user message: 7 framing tokens around the content
    # (ctok.token_count("a") == 8); the wire's usage for a piece is its content
    return ctok.token_count(text, version="3.0") - 7 if text else 0


def wire_tokens(model: str, text: str) -> int:
    return claude_v3(text) if "claude" in model else o200k(text)


RESULT = "a.py:3: import os\n\tb.py:9: import sys"  # a newline and a tab: counted unescaped
QUESTION = "Which files import os?"


def anthropic_tool_body(*, tools=True, result_id="toolu_01", use_role="assistant",
                        result_first=True, tool_input=None, choice=None, answered=True):
    use = {"type": "tool_use", "id": "toolu_01", "name": "grep",
           "input": {"pattern": "import"} if tool_input is None else tool_input}
    result = {"type": "tool_result", "tool_use_id": result_id, "content": RESULT}
    after = [result, {"type": "text", "text": "go on"}] if result_first \
        else [{"type": "text", "text": "go on"}, result]
    messages = [
        {"role": "user", "content": "Find the imports."},
        {"role": use_role, "content": [{"type": "text", "text": "I'll grep."}, use]},
        {"role": "user", "content": after if answered else [{"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 16, "messages": messages}
    if tools:
        body["tools"] = [{"name": "grep", "description": "search",
                          "input_schema": {"type": "object", "additionalProperties": True}}]
        body["tool_choice"] = choice or {"type": "none"}
    return body


def test_anthropic_twin_accepts_a_conversation_with_tool_use_and_bills_its_text(server):
    body = anthropic_tool_body()
    reply = post(server, "anthropic", "/v1/messages", body, ANTHROPIC_HEADERS)
    assert reply.status_code == 200, reply.text
    assert reply.json()["content"][0]["text"] == "echo: " + QUESTION
    (exchange,) = server["anthropic"].log
    assert exchange.tool_calls == 1
    # every piece of text on the wire, the tool definitions and the call's input as compact JSON
    definitions = ('[{"name":"grep","description":"search","input_schema":{"type":"object",'
                   '"additionalProperties":true}}]')
    pieces = [definitions, "Find the imports.", "I'll grep.", "grep", '{"pattern":"import"}',
              RESULT, "go on", "Two files.", QUESTION]
    assert exchange.text_tokens == sum(claude_v3(p) for p in pieces)
    assert reply.json()["usage"]["input_tokens"] == exchange.text_tokens


@pytest.mark.parametrize(("case", "needle"), [
    ("no tools", "Requests which include `tool_use` or `tool_result` blocks must define tools."),
    ("unknown result id", "unexpected `tool_use_id` found in `tool_result` blocks: toolu_99"),
    ("unanswered", "`tool_use` ids were found without `tool_result` blocks immediately after: "
                   "toolu_01"),
    ("tool_use from the user", "`tool_use` blocks are only allowed in assistant messages"),
    ("text before result", "`tool_result` blocks must come first"),
    ("input not an object", "tool_use.input: Input should be a valid dictionary"),
    ("bad tool_choice", "tool_choice.type: Input tag 'never'"),
])
def test_anthropic_twin_refuses_malformed_tool_use(server, case, needle):
    body = {"no tools": lambda: anthropic_tool_body(tools=False),
            "unknown result id": lambda: anthropic_tool_body(result_id="toolu_99"),
            "unanswered": lambda: anthropic_tool_body(answered=False),
            "tool_use from the user": lambda: anthropic_tool_body(use_role="user"),
            "text before result": lambda: anthropic_tool_body(result_first=False),
            "input not an object": lambda: anthropic_tool_body(tool_input='{"pattern": "x"}'),
            "bad tool_choice": lambda: anthropic_tool_body(choice={"type": "never"})}[case]()
    reply = post(server, "anthropic", "/v1/messages", body, ANTHROPIC_HEADERS)
    assert reply.status_code == 400
    error = reply.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert needle in error["error"]["message"]


BEDROCK_HEADERS = {"Authorization": "AWS4-HMAC-SHA256 Credential=x"}
BEDROCK_PATH = "/model/anthropic.claude-x/converse"


def bedrock_tool_body(*, config=True, result_id="tooluse_1", choice=None, answered=True):
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "grep", "input": {"pattern": "import"}}}
    result = {"toolResult": {"toolUseId": result_id, "content": [{"text": RESULT}],
                             "status": "success"}}
    body = {"messages": [
        {"role": "user", "content": [{"text": "Find the imports."}]},
        {"role": "assistant", "content": [{"text": "I'll grep."}, use]},
        {"role": "user", "content": [result] if answered else [{"text": "go on"}]},
        {"role": "assistant", "content": [{"text": "Two files."}]},
        {"role": "user", "content": [{"text": QUESTION}]}]}
    if config:
        body["toolConfig"] = {"tools": [{"toolSpec": {
            "name": "grep", "description": "search",
            "inputSchema": {"json": {"type": "object"}}}}]}
        if choice is not None:
            body["toolConfig"]["toolChoice"] = choice
    return body


def test_bedrock_twin_accepts_a_conversation_with_tool_use(server):
    import httpx

    reply = httpx.post(server.api_base("bedrock") + BEDROCK_PATH, json=bedrock_tool_body(),
                       headers=BEDROCK_HEADERS, timeout=60)
    assert reply.status_code == 200, reply.text
    (exchange,) = server["bedrock"].log
    definitions = ('[{"toolSpec":{"name":"grep","description":"search","inputSchema":{"json":'
                   '{"type":"object"}}}}]')
    pieces = [definitions, "Find the imports.", "I'll grep.", "grep", '{"pattern":"import"}',
              RESULT, "Two files.", QUESTION]
    assert exchange.tool_calls == 1
    assert reply.json()["usage"]["inputTokens"] == sum(claude_v3(p) for p in pieces)


@pytest.mark.parametrize(("case", "needle"), [
    ("no toolConfig", "The toolConfig field must be defined when using toolUse and toolResult"),
    ("unknown result id", "Expected toolResult blocks at messages.2.content for the following "
                          "Ids: tooluse_1 (got unknown Ids: tooluse_9)"),
    ("unanswered", "Expected toolResult blocks at messages.2.content for the following Ids: "
                   "tooluse_1"),
    ("toolChoice none", "toolConfig.toolChoice: must set exactly one of auto, any, tool"),
])
def test_bedrock_twin_refuses_malformed_tool_use(server, case, needle):
    import httpx

    body = {"no toolConfig": lambda: bedrock_tool_body(config=False),
            "unknown result id": lambda: bedrock_tool_body(result_id="tooluse_9"),
            "unanswered": lambda: bedrock_tool_body(answered=False),
            "toolChoice none": lambda: bedrock_tool_body(choice={"none": {}})}[case]()
    reply = httpx.post(server.api_base("bedrock") + BEDROCK_PATH, json=body,
                       headers=BEDROCK_HEADERS, timeout=60)
    assert reply.status_code == 400
    assert reply.headers["x-amzn-ErrorType"] == "ValidationException"
    assert needle in reply.json()["message"]


def gemini_tool_body(*, call_role="model", answer_name="grep", answered=True, mode="NONE",
                     declaration="grep", snake=False):
    call = {"name": "grep", "args": {"pattern": "import"}}
    response = {"name": answer_name, "response": {"content": RESULT}}
    call_key, response_key, declarations_key = (
        ("function_call", "function_response", "function_declarations") if snake
        else ("functionCall", "functionResponse", "functionDeclarations"))
    contents = [
        {"role": "user", "parts": [{"text": "Find the imports."}]},
        {"role": call_role, "parts": [{"text": "I'll grep."}, {call_key: call}]},
        *([{"role": "user", "parts": [{response_key: response}]}] if answered else []),
        {"role": "model", "parts": [{"text": "Two files."}]},
        {"role": "user", "parts": [{"text": QUESTION}]}]
    return {"contents": contents,
            "tools": [{declarations_key: [{"name": declaration, "description": "search",
                                           "parameters": {"type": "object"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": mode}}}


@pytest.mark.parametrize("snake", [False, True], ids=["camelCase", "snake_case"])
def test_gemini_twin_accepts_a_conversation_with_function_calls(server, snake):
    reply = post(server, "gemini", "/models/gemini-2.5-flash:generateContent",
                 gemini_tool_body(snake=snake), {"x-goog-api-key": KEY})
    assert reply.status_code == 200, reply.text
    (exchange,) = server["gemini"].log
    definitions = '[{"name":"grep","description":"search","parameters":{"type":"object"}}]'
    pieces = [definitions, "Find the imports.", "I'll grep.", "grep", '{"pattern":"import"}',
              "grep", '{"content":"' + RESULT + '"}', "Two files.", QUESTION]
    assert exchange.tool_calls == 1
    # Gemini has no offline tokenizer: its twin bills text as bytes/4, as the predictions do
    assert reply.json()["usageMetadata"]["promptTokenCount"] == sum(
        (len(p.encode()) + 3) // 4 for p in pieces)


@pytest.mark.parametrize(("case", "needle"), [
    ("response without call", "function response turn comes immediately after a function call"),
    ("response to another function", "the number of function response parts is equal to the "
                                      "number of function call parts"),
    ("unanswered", "the number of function response parts is equal"),
    ("call from the user", "a function call can only come from the model"),
    ("declaration name", "Invalid function name"),
    ("mode", "Invalid value at 'tool_config.function_calling_config.mode'"),
])
def test_gemini_twin_refuses_malformed_function_calls(server, case, needle):
    body = {"response without call": _gemini_orphan_response,
            "response to another function": lambda: gemini_tool_body(answer_name="read"),
            "unanswered": lambda: gemini_tool_body(answered=False),
            "call from the user": lambda: gemini_tool_body(call_role="user"),
            "declaration name": lambda: gemini_tool_body(declaration="grep files"),
            "mode": lambda: gemini_tool_body(mode="NEVER")}[case]()
    reply = post(server, "gemini", "/models/gemini-2.5-flash:generateContent", body,
                 {"x-goog-api-key": KEY})
    assert reply.status_code == 400
    assert reply.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert needle in reply.json()["error"]["message"]


def _gemini_orphan_response():
    body = gemini_tool_body()
    body["contents"][1]["parts"] = [{"text": "I'll grep."}]  # the call is gone, its answer stays
    return body


@pytest.mark.parametrize(("history", "signed", "status"), [
    ("question last", False, 200),     # the harness's shape: calls only in earlier turns
    ("call in the current turn", True, 200),
    ("call in the current turn", False, 400),
])
def test_gemini_3_wants_thought_signatures_in_the_current_turn_only(server, history, signed,
                                                                     status):
    body = gemini_tool_body()
    if signed:
        signature = b64(b"skip_thought_signature_validator")  # Google's documented dummy
        body["contents"][1]["parts"][1]["thoughtSignature"] = signature
    if history == "call in the current turn":  # the function response is the last content
        body["contents"] = body["contents"][:3]
    reply = post(server, "gemini", "/models/gemini-3-flash-preview:generateContent", body,
                 {"x-goog-api-key": KEY})
    assert reply.status_code == status, reply.text
    if status == 400:
        assert "missing a thought_signature" in reply.json()["error"]["message"]


def openai_tool_body(*, model="gpt-4.1", call_id="call_1", answer_id="call_1", answered=True,
                     arguments='{"pattern":"import"}', tools=True, name="grep"):
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Find the imports."},
        {"role": "assistant", "content": "I'll grep.", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": arguments}}]},
        *([{"role": "tool", "tool_call_id": answer_id, "content": RESULT}] if answered else []),
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    body = {"model": model, "messages": messages, "tool_choice": "none"}
    if tools:
        body["tools"] = [{"type": "function", "function": {
            "name": "grep", "description": "search", "parameters": {"type": "object"}}}]
    return body


@pytest.mark.parametrize(("twin", "model"), [("openai", "gpt-4.1"),
                                             ("openrouter", "anthropic/claude-sonnet-4.5"),
                                             ("zai", "glm-4.5v"), ("moonshot", "kimi-k2.5")])
def test_openai_compatible_twins_accept_a_conversation_with_tool_calls(server, twin, model):
    reply = post(server, twin, "/chat/completions", openai_tool_body(model=model),
                 {"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == 200, reply.text
    (exchange,) = server[twin].log
    definitions = ('[{"type":"function","function":{"name":"grep","description":"search",'
                   '"parameters":{"type":"object"}}}]')
    pieces = [definitions, "You are terse.", "Find the imports.", "grep", '{"pattern":"import"}',
              "I'll grep.", RESULT, "Two files.", QUESTION]
    assert exchange.tool_calls == 1
    assert reply.json()["usage"]["prompt_tokens"] == sum(wire_tokens(model, p) for p in pieces)


@pytest.mark.parametrize(("case", "code", "needle"), [
    ("tool answers nothing", "invalid_request_error",
     "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"),
    ("unanswered", "invalid_request_error",
     "The following tool_call_ids did not have response messages: call_1"),
    ("arguments object", "invalid_type",
     "'messages[2].tool_calls[0].function.arguments': expected a string"),
    ("tool_choice without tools", "invalid_request_error",
     "'tool_choice' is only allowed when 'tools' are specified"),
    ("function name", "invalid_value", "does not match pattern"),
])
def test_openai_twin_refuses_malformed_tool_calls(server, case, code, needle):
    body = {"tool answers nothing": lambda: openai_tool_body(answer_id="call_9"),
            "unanswered": lambda: openai_tool_body(answered=False),
            "arguments object": lambda: openai_tool_body(arguments={"pattern": "import"}),
            "tool_choice without tools": lambda: openai_tool_body(tools=False),
            "function name": lambda: openai_tool_body(name="grep files")}[case]()
    reply = post(server, "openai", "/chat/completions", body, {"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == (None if code == "invalid_request_error" else code)
    assert needle in error["message"]


def test_openai_responses_twin_pairs_function_call_outputs(server):
    def body(output_id):
        return {"model": "gpt-5", "tool_choice": "none",
                "tools": [{"type": "function", "name": "grep", "parameters": {"type": "object"}}],
                "input": [{"role": "user", "content": "Find the imports."},
                          {"type": "function_call", "call_id": "call_1", "name": "grep",
                           "arguments": '{"pattern":"import"}'},
                          {"type": "function_call_output", "call_id": output_id, "output": RESULT},
                          {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]}]}

    headers = {"Authorization": f"Bearer {KEY}"}
    accepted = post(server, "openai", "/responses", body("call_1"), headers)
    refused = post(server, "openai", "/responses", body("call_9"), headers)
    assert accepted.status_code == 200, accepted.text
    assert server["openai"].log[0].tool_calls == 1
    assert refused.status_code == 400
    assert "No tool call found for function call output with call_id call_9" in \
        refused.json()["error"]["message"]


# --------------------------------------------------------------------------------------------
# through litellm and the client: refusals recorded once, rate limits waited out as asked


ROUTES = {"anthropic": "anthropic/claude-sonnet-4-5", "openai": "openai/gpt-4.1",
          "responses": "openai/responses/gpt-5", "gemini": "gemini/gemini-2.5-flash",
          "bedrock": "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
ENV = {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY, "GEMINI_API_KEY": KEY,
       "AWS_ACCESS_KEY_ID": "TWINDUMMYACCESSKEY01", "AWS_SECRET_ACCESS_KEY": KEY,
       "AWS_REGION_NAME": "us-east-1"}


def _client(slept: list[float]) -> EvalClient:
    client = EvalClient(cache=None, renderer_version="twin-test",
                        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02))

    async def record(seconds: float) -> None:
        slept.append(seconds)

    client._sleep = record
    return client


def _ask(server, route: str, slept: list[float], detail: str = "high", size=(512, 200)):
    import hashlib

    twin = "openai" if route == "responses" else route
    image = png(*size)
    request = Request(model=ROUTES[route], messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(image), "detail": detail}},
        {"type": "text", "text": "What does it say?"}]}],
        params={"api_base": server.api_base(twin), "max_tokens": 32},
        frame_hashes=(hashlib.sha256(image).hexdigest(),))
    return asyncio.run(_client(slept).complete(request)), server[twin]


@pytest.fixture
def provider_env(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_wire_answers_through_litellm_with_the_twins_usage(server, provider_env, route):
    slept: list[float] = []
    response, twin = _ask(server, route, slept)
    (exchange,) = twin.log
    assert response.ok and response.attempts == 1 and slept == []
    assert response.answer == "echo: What does it say?"
    assert (response.prompt_tokens, response.completion_tokens) == \
        (exchange.prompt_tokens, exchange.completion_tokens)
    assert exchange.image_sizes == ((512, 200),) and exchange.image_tokens


TOOL_CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Find the imports."}]},
    {"role": "assistant", "content": "I'll grep.", "tool_calls": [
        {"id": "call_0001", "type": "function",
         "function": {"name": "grep", "arguments": '{"pattern":"import"}'}},
        {"id": "call_0002", "type": "function",
         "function": {"name": "read", "arguments": '{"path":"a.py"}'}}]},
    {"role": "tool", "tool_call_id": "call_0001", "content": RESULT},
    {"role": "tool", "tool_call_id": "call_0002", "content": "import os"},
    {"role": "assistant", "content": "Two files."},
]
OPEN_TOOLS = [{"type": "function", "function": {
    "name": name, "description": f"The agent's {name} tool.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": True}}}
    for name in ("grep", "read")]


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_tool_conversation_reaches_every_wire_through_litellm(server, provider_env, route):
    """The harness's request shape (issue 10): OpenAI-format history with tool calls and results,
    an image and the question last, the called tools declared, ``tool_choice="none"``."""
    import hashlib

    twin = "openai" if route == "responses" else route
    image = png(512, 200)
    messages = [*TOOL_CONVERSATION, {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(image), "detail": "high"}},
        {"type": "text", "text": QUESTION}]}]
    params = {"api_base": server.api_base(twin), "max_tokens": 32, "tools": OPEN_TOOLS,
              "tool_choice": "none"}
    if route == "bedrock":
        params["drop_params"] = True  # Converse has no toolChoice none: see the next test
    request = Request(model=ROUTES[route], messages=messages, params=params,
                      frame_hashes=(hashlib.sha256(image).hexdigest(),))
    slept: list[float] = []
    response = asyncio.run(_client(slept).complete(request))
    (exchange,) = server[twin].log
    assert response.ok, response.error
    assert response.answer == "echo: " + QUESTION
    assert exchange.tool_calls == 2 and exchange.image_sizes == ((512, 200),)
    assert response.prompt_tokens == exchange.prompt_tokens


def test_bedrock_tool_choice_none_never_reaches_the_wire(server, provider_env):
    """Finding: Converse's toolChoice is auto/any/tool; litellm refuses ``tool_choice="none"``
    for Bedrock before sending (the smoke runs pass ``drop_params``: smoke.WORKAROUNDS)."""
    request = Request(model=ROUTES["bedrock"], messages=[*TOOL_CONVERSATION, {
        "role": "user", "content": QUESTION}], params={
        "api_base": server.api_base("bedrock"), "max_tokens": 32, "tools": OPEN_TOOLS,
        "tool_choice": "none"})
    response = asyncio.run(_client([]).complete(request))
    assert not response.ok and "tool_choice=none" in response.error
    assert server["bedrock"].log == []


@pytest.mark.parametrize(("route", "fault", "low", "high"), [
    # explicit waits: retry-after / retry-after-ms / Gemini's RetryInfo in the body
    ("anthropic", Fault.rate_limited(0.4), 0.4, 0.45),
    ("openai", Fault.rate_limited(0.25), 0.25, 0.28),
    ("gemini", Fault.rate_limited(0.6), 0.6, 0.67),
    ("bedrock", Fault.rate_limited(0.3), 0.3, 0.34),
    # no retry-after: the reset time of the used-up limit
    ("anthropic", Fault("rate_limit", None, reset_s=3.0), 1.9, 3.35),  # RFC 3339, whole seconds
    ("openai", Fault("rate_limit", None, reset_s=1.5), 1.5, 1.66),  # x-ratelimit-reset-*: "1.5s"
    # overloaded: exponential backoff of the policy
    ("anthropic", Fault.overloaded(), 0.005, 0.01),
    ("gemini", Fault.overloaded(), 0.005, 0.01),
])
def test_rate_limits_and_overloads_are_retried_after_the_wait_the_provider_asked(
        server, provider_env, route, fault, low, high):
    server[route].push(fault)
    slept: list[float] = []
    response, twin = _ask(server, route, slept)
    assert response.ok and response.attempts == 2
    assert twin.log[0].status in (429, 503, 529) and twin.log[1].accepted
    assert len(slept) == 1 and low <= slept[0] <= high


def test_a_refusal_is_recorded_once_and_never_retried(server, provider_env):
    slept: list[float] = []
    response, twin = _ask(server, "openai", slept, detail="original")
    assert not response.ok and response.attempts == 1 and slept == []
    assert "'original' is not supported" in response.error and KEY not in response.error
    assert [e.status for e in twin.log] == [400]


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-remaining-requests": "0"}, 360.0),
    ({"x-ratelimit-reset-tokens": "20ms"}, 0.02),
    ({"x-ratelimit-reset-requests": "1h2m3.5s", "x-ratelimit-remaining-requests": "0"}, 3723.5),
    # a limit with requests left is not the one that was hit
    ({"x-ratelimit-reset-requests": "9s", "x-ratelimit-remaining-requests": "12",
      "x-ratelimit-reset-tokens": "2s", "x-ratelimit-remaining-tokens": "0"}, 2.0),
    ({"x-ratelimit-reset-requests": "soon"}, None),
])
def test_openai_reset_durations(headers, seconds):
    error = Exception("rate limited")
    error.litellm_response_headers = headers
    assert retry_after_seconds(error) == (None if seconds is None else pytest.approx(seconds))


# --------------------------------------------------------------------------------------------
# preflight: what a provider would refuse is refused before anything is sent


def _messages(*urls, detail=None):
    parts = [{"type": "image_url", "image_url": {"url": u, **({"detail": detail} if detail
                                                              else {})}} for u in urls]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": "q"}]}]


@pytest.mark.parametrize(("messages", "target", "provider", "needle"), [
    (lambda: _messages(*[data_url(png(64, 64))] * 9), "claude-sonnet-4-5", "openrouter",
     "9 images, but openrouter accepts at most 8 per request: max_images"),
    (lambda: _messages(data_url(png(8001, 8))), "claude-sonnet-4-5", "anthropic",
     "8001x8 px, over anthropic's 8000 px: max_edge"),
    (lambda: _messages(*[data_url(png(2001, 8))] * 21), "claude-sonnet-4-5", "google-vertex",
     "over anthropic's 2000 px: max_edge_over_20_images"),
    (lambda: _messages(data_url(png(1200, 1200, noise=True))), "claude-sonnet-4-5",
     "amazon-bedrock", "over amazon-bedrock's 3,750,000: max_image_bytes"),
    (lambda: _messages(*[data_url(png(1300, 1300, noise=True))] * 3), "gemini-2.5-flash",
     "google", "over google's 20,000,000: max_request_bytes"),
    (lambda: _messages(data_url(png(64, 64)), detail="original"), "gpt-4.1", "openai",
     "detail 'original'"),
], ids=["openrouter-images", "anthropic-edge", "edge-over-20", "bedrock-bytes", "gemini-bytes",
        "detail-original"])
def test_preflight_names_the_limit(messages, target, provider, needle):
    with pytest.raises(PreflightError) as refused:
        check_request(messages(), target_model=target, provider=provider, label="req")
    message = str(refused.value)
    assert message.startswith("req: ") and needle in message
    assert "pricing.toml" in message or "detail" in needle


def test_preflight_passes_what_the_twins_accept():
    check_request(_messages(*[data_url(png(1932, 1932))] * 8), target_model="claude-opus-4-7",
                  provider="openrouter")


def test_a_run_past_a_limit_stops_before_sending_anything(server, tmp_path):
    # the archive writes detail "original" on every OpenAI frame (the family default); GPT-4.1
    # is tile-billed and takes low/high/auto only. Without the config's documented override the
    # run must stop before the first request, naming the detail.
    # (since issue 10 the context's request bill meets the detail first: a ValueError from
    # snapcompact.billing while the contexts are built, before any request is planned)
    with pytest.raises((PreflightError, ValueError), match="detail 'original'"):
        run_against_twin("gpt-4.1", server, tmp_path, overrides=["model.image_detail=null"])
    assert server.exchanges() == []


# --------------------------------------------------------------------------------------------
# every model config that calls a provider: experiment=smoke, end to end, against its twin

CONFIGS = real_provider_configs()
NO_IMAGE_RULE = {"glm", "kimi", "openrouter-glm"}  # GLM and Kimi publish no image-token rule


@pytest.fixture(scope="module")
def smoke_runs(twins, tmp_path_factory):
    from evals.store.records import iter_records

    root = tmp_path_factory.mktemp("smoke")
    runs = {}
    for config in CONFIGS:
        if twin_for(config) is None:
            continue
        twins.reset()
        # no per-minute token limit: the smoke's contexts (production's regime) pass 30k tokens
        result = run_against_twin(config, twins, root, overrides=[
            "model.rate_limit_rps=null", "model.tokens_per_minute=null"])
        records = list(iter_records(root / "runs" / config / "records.jsonl"))
        exchanges = list(twins[twin_for(config)].log)  # not the token twin's (Vertex)
        _tally(twins)
        runs[config] = (result, records, exchanges, drift_rows(config, records, exchanges))
    print("\n" + format_drift_table([row for *_, rows in runs.values() for row in rows]))
    return runs


def test_every_provider_config_is_covered():
    assert len(CONFIGS) >= 15
    assert {twin_for(c) for c in CONFIGS} == {"anthropic", "openai", "gemini", "openrouter",
                                              "zai", "moonshot", "bedrock", "vertex",
                                              "vertex-anthropic"}


@pytest.mark.parametrize("config", CONFIGS)
def test_smoke_runs_against_the_twin_end_to_end(smoke_runs, config):
    result, records, exchanges, rows = smoke_runs[config]
    # experiment=smoke: 4 arms (full, truncate, snapcompact x 2 shapes) x 2 questions; requests
    # identical across arms (an arm that drew no frames) share one answer
    assert result.planned == len(records) == 8 and result.errors == 0
    assert len({(r.strategy, r.shape) for r in records}) == 4
    assert 0 < result.requests_sent <= 8 and len(exchanges) == result.requests_sent
    assert all(r.error is None and r.answer.startswith("echo: ") for r in records)
    assert all(e.accepted for e in exchanges)
    # the questions ride on an agent conversation: tool calls and results reached the wire
    assert max(e.tool_calls for e in exchanges) >= 2
    # every row carries exactly the usage its twin computed, and every answer was recorded
    usage = {(e.prompt_tokens, e.completion_tokens) for e in exchanges}
    recorded = {(r.reported_prompt_tokens, r.reported_completion_tokens) for r in records}
    assert recorded == usage
    imaged = [row for row in rows if row.frame_px]
    assert imaged and all(len(row.predicted_image_tokens) == len(row.frame_px) for row in imaged)
    if config in NO_IMAGE_RULE:
        assert all(row.twin_image_tokens is None for row in imaged)
    else:  # two independent readings of the docs agree on the smoke frames (512 px wide; where
        # they differ, on larger frames: test_the_documented_disagreement_shows_as_drift...)
        assert all(row.twin_image_tokens == row.predicted_image_tokens for row in imaged)
        # text: the twin counts each piece on the provider's wire separately (tool inputs as
        # JSON, Gemini's results inside an object), the prediction the OpenAI-format text
        # joined by newlines; each message and tool block shifts the count by a token or two
        # (about 20 wire messages here): within 2 % of the request, or 40 tokens
        for row in rows:
            assert abs(row.reported_prompt_tokens - row.predicted_prompt_tokens) \
                <= max(40, 0.02 * row.predicted_prompt_tokens), row


def test_bedrock_config_runs_without_tool_choice_none(twins, tmp_path):
    """Converse has no tool_choice "none" (litellm refuses it before sending): the pipeline
    leaves tool_choice out for Bedrock, and every smoke request reaches the twin and succeeds."""
    from evals.store.records import iter_records

    twins.reset()
    run_against_twin("bedrock-claude-sonnet-4-5", twins, tmp_path, workarounds=False,
                     overrides=["model.rate_limit_rps=null", "model.tokens_per_minute=null"])
    records = list(iter_records(tmp_path / "runs" / "bedrock-claude-sonnet-4-5" /
                                "records.jsonl"))
    assert len(records) == 8 and all(r.error is None for r in records)
    assert len(twins.exchanges()) == 8


def test_billing_drift_plot_has_the_twins_reports(smoke_runs):
    import matplotlib

    matplotlib.use("Agg")
    from evals.analysis.aggregate import records_frame
    from evals.analysis.plot import plot_billing_drift
    from snapcompact.pricing import shape_rules

    records = [r for _, recs, _, _ in smoke_runs.values() for r in recs]
    frame = records_frame(records, shape_rules())
    assert frame["reported_prompt_tokens_by_provider"].notna().all()
    fig = plot_billing_drift(frame)
    (ax,) = fig.axes
    assert len(ax.collections) == len({(r.model, r.target_model) for r in records})


@pytest.mark.parametrize("config", ["claude-sonnet-4-5", "vertex-claude-sonnet-4-5"])
def test_the_documented_disagreement_shows_as_drift_on_full_frames(server, tmp_path, config):
    """Claude below the high-res tier: billing caps at 1,568 visual tokens, the twin at ~1,600
    (docs/running-real-models.md): a 1568 px wide frame past either cap is resized by both, to
    at most 1,568 tokens by billing and to more than that (at most 1,600) by the twin; a frame
    within 1,568 tokens (1568x768: 56 x 28 patches) is billed the same by both. On some aspect
    ratios the patch grid keeps the twin's largest fit under 1,568 as well."""
    import math

    from evals.store.records import iter_records

    run_against_twin(config, server, tmp_path, overrides=[
        "model.rate_limit_rps=null", "frame_size=1568", "shapes=[11on16-bw]",
        "strategies=[snapcompact]", "dataset.params.target_tokens=60000", "context_window=32000",
        "++settings.compaction.keepRecentTokens=8000",
        "++settings.compaction.reserveTokens=4096"])  # production draws a full middle page here
    records = list(iter_records(tmp_path / "runs" / config / "records.jsonl"))
    rows = [r for r in drift_rows(config, records, server[twin_for(config)].log) if r.frame_px]
    assert rows
    for row in rows:
        patches = [math.ceil(w / 28) * math.ceil(h / 28) for w, h in row.frame_px]
        over = [i for i, p in enumerate(patches) if p > 1600]
        within = [i for i, p in enumerate(patches) if p <= 1568]
        assert over, row.frame_px
        assert all(row.predicted_image_tokens[i] <= 1568 and
                   row.predicted_image_tokens[i] <= row.twin_image_tokens[i] <= 1600
                   for i in over)
        assert any(row.twin_image_tokens[i] > 1568 for i in over)
        assert all(row.predicted_image_tokens[i] == row.twin_image_tokens[i] == patches[i]
                   for i in within)
        assert row.drift > 0
