"""Inline imaging (``snapcompact.systemPrompt`` / ``snapcompact.toolResults``), per request.

Expectations are the coding agent's rules (18.3.4 ``snapcompact-inline.ts``; the seeds name the
settings only): 6 system-prompt frames at most, tool results of 3,000+ tokens, frames only when
they cost at most 0.9 x the text, the newest result and error results never imaged, a result too
big for the remaining image budget skipped (not a stop), the prompt imaged from what budget is
left and only onto an existing user message, ``agents-md`` = the ``<repo-rules>`` and
``## Context`` ``<instructions>`` sections. The end-to-end cases use the real renderer.
"""

from __future__ import annotations

import base64

import pytest

from snapcompact.compaction import ModelInfo, inline_request, llm_system_prompt, prompt
from snapcompact.compaction.inline import (
    InlineImager,
    InlineOptions,
    PromptCandidate,
    ToolResultCandidate,
    estimate_inline_savings,
    plan_inline_swaps,
    select_system_prompt_target,
    tool_result_text,
)
from snapcompact.compaction.settings import (
    DEFAULT_SETTINGS,
    SnapcompactSettings,
    merge_settings,
)
from snapcompact.pricing import provider_image_budget, resolve_shape
from snapcompact.render import frames as count_frames

BOTH = InlineOptions(system_prompt="all", tool_results=True)


def _c(i: int, tokens: int, frames: int, error: bool = False) -> ToolResultCandidate:
    return ToolResultCandidate(f"t{i}", tokens, frames, error)


def _plan(results, *, budget=10, prompt_candidate=None, user=True, options=BOTH, frame_tokens=1000):
    plan = plan_inline_swaps(options, frame_tokens=frame_tokens, budget=budget, tool_results=results,
                             system_prompt=prompt_candidate, has_user_message=user)
    return [c.id for c in plan.tool_results], plan.system_prompt


@pytest.mark.parametrize(("results", "budget", "swapped"), [
    # The newest result is never imaged, even when it qualifies.
    ([_c(0, 5000, 2), _c(1, 5000, 2)], 10, ["t0"]),
    # Under 3,000 tokens stays text; 3,000 exactly qualifies (3 frames x 1,000 > 2,700: gate fails,
    # so 2 frames).
    ([_c(0, 2999, 1), _c(1, 3000, 2), _c(2, 9, 0)], 10, ["t1"]),
    # Savings gate at the edge: 9 x 1,000 <= 0.9 x 10,000 passes; at 9,999 tokens it does not.
    ([_c(0, 10_000, 9), _c(1, 9_999, 9), _c(2, 1, 0)], 20, ["t0"]),
    # Error results stay text (providers validate them as text).
    ([_c(0, 8000, 2, error=True), _c(1, 8000, 2), _c(2, 1, 0)], 10, ["t1"]),
    # A result too big for what is left is skipped; a later smaller one still fits.
    ([_c(0, 50_000, 4), _c(1, 50_000, 8), _c(2, 8000, 2), _c(3, 1, 0)], 7, ["t0", "t2"]),
    # No frames (empty text) means nothing to swap; an exhausted budget stops.
    ([_c(0, 8000, 0), _c(1, 8000, 3), _c(2, 8000, 3), _c(3, 1, 0)], 3, ["t1"]),
])
def test_tool_result_rules(results, budget, swapped):
    assert _plan(results, budget=budget)[0] == swapped


def test_tool_results_off_swaps_none():
    assert _plan([_c(0, 9000, 1), _c(1, 1, 0)], options=InlineOptions(system_prompt="all"))[0] == []


@pytest.mark.parametrize(("candidate", "budget", "user", "results", "imaged"), [
    (PromptCandidate(10_000, 6), 10, True, [], True),
    (PromptCandidate(10_000, 7), 10, True, [], False),  # more than 6 frames
    (PromptCandidate(6_000, 6), 10, True, [], False),  # 6,000 > 0.9 x 6,000
    (PromptCandidate(10_000, 3), 10, False, [], False),  # no user message to carry the frames
    (PromptCandidate(10_000, 3), 2, True, [], False),  # over the budget
    # Tool results take the budget first; the prompt gets what is left.
    (PromptCandidate(10_000, 3), 6, True, [_c(0, 9000, 4), _c(1, 1, 0)], False),
    (PromptCandidate(10_000, 2), 6, True, [_c(0, 9000, 4), _c(1, 1, 0)], True),
    (PromptCandidate(0, 0), 10, True, [], False),
])
def test_system_prompt_rules(candidate, budget, user, results, imaged):
    assert (_plan(results, budget=budget, prompt_candidate=candidate, user=user)[1] is not None) == imaged


def test_system_prompt_targets():
    assert select_system_prompt_target(["a", "b"], "none") is None
    whole = select_system_prompt_target(["You are an agent.", "Tools: read"], "all")
    assert whole.text == "You are an agent.\n\nTools: read"
    assert whole.replacement == (prompt("inline-system-stub"),) and whole.user_note == prompt("inline-system-note")
    block = ("Intro\n<repo-rules>\nrule one\n</repo-rules>\nmiddle\n"
             "## Context\n<instructions>\nuse tabs\n</instructions>\nend")
    agents = select_system_prompt_target([block, "second"], "agents-md")
    assert agents.text == "<repo-rules>\nrule one\n</repo-rules>\n\n## Context\n<instructions>\nuse tabs\n</instructions>"
    stub = prompt("inline-context-stub")
    assert agents.replacement == (f"Intro\n{stub}\nmiddle\n{stub}\nend", "second")
    assert select_system_prompt_target(["no sections here"], "agents-md") is None


def test_tool_result_text_marks_images():
    content = [{"type": "text", "text": "a"}, {"type": "image", "data": "x", "mimeType": "image/png"},
               {"type": "text", "text": "b"}]
    assert tool_result_text(content) == "a\n[Source image 1 was attached here in the original tool result.]\nb"


CLAUDE = ModelInfo("claude-sonnet-4-5", 200_000, provider="anthropic", api="anthropic-messages")
GEMINI = ModelInfo("gemini-2.5-pro", 1_000_000, provider="google", api="google-generative-ai")
BIG = " ".join(f"line {i}: value={i * 7} status=ok path=src/mod{i % 13}.py" for i in range(700))  # ~39 kB


def _request():
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    return [
        {"role": "user", "content": "please look"},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}]},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
         "content": [{"type": "text", "text": BIG}, image], "isError": False},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c2", "name": "read", "arguments": {}}]},
        {"role": "toolResult", "toolCallId": "c2", "toolName": "read",
         "content": [{"type": "text", "text": BIG}], "isError": False},
    ]


def test_transform_images_older_large_results_and_the_prompt():
    messages = _request()
    snapshot = repr(messages)
    system = ["You are a careful agent. " * 400]
    imager = InlineImager(BOTH)
    out = imager.transform(system, messages, GEMINI)
    assert repr(messages) == snapshot  # inputs untouched (they alias the persisted session)
    resolved = resolve_shape(GEMINI.id, api=GEMINI.api, provider=GEMINI.provider)
    text = BIG + "\n[Source image 1 was attached here in the original tool result.]"
    n = count_frames(text, resolved.shape)
    swapped = out.messages[2]["content"]
    assert swapped[0] == {"type": "text", "text": prompt("inline-tool-result-note")}
    assert [b["type"] for b in swapped[1:1 + n]] == ["image"] * n
    assert base64.b64decode(swapped[1]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert swapped[1 + n]["type"] == "text" and "source image 1" in swapped[1 + n]["text"]
    assert swapped[2 + n] == messages[2]["content"][1] and len(swapped) == n + 3
    assert out.messages[4] == messages[4]  # the newest result stays text
    tokens = -(-len(text.encode()) // 4)
    assert out.tool_result_savings == (("c1", tokens - n * resolved.frame_token_estimate),)
    # The system prompt went to the first user message, behind its note; the prompt is the stub.
    p = count_frames(system[0], resolved.shape)
    user = out.messages[0]["content"]
    assert user[0] == {"type": "text", "text": prompt("inline-system-note")}
    assert [b["type"] for b in user[1:1 + p]] == ["image"] * p
    assert user[1 + p:] == [{"type": "text", "text": "please look"}]
    assert out.system_prompt == (prompt("inline-system-stub"),) and out.changed
    # A second request reuses the rendered frames.
    calls = []
    imager.render = lambda *a: calls.append(a) or []
    again = imager.transform(system, messages, GEMINI)
    assert calls == [] and again.messages == out.messages


def test_claude_frames_cost_too_much_for_this_result():
    # 11on16-bw at 1568 px: 3 frames x ~3,300 tokens > 0.9 x ~8,400 text tokens: both stay text.
    resolved = resolve_shape(CLAUDE.id, api=CLAUDE.api, provider=CLAUDE.provider)
    text = BIG + "\n[Source image 1 was attached here in the original tool result.]"
    tokens = -(-len(text.encode()) // 4)
    assert count_frames(text, resolved.shape) * resolved.frame_token_estimate > 0.9 * tokens
    assert not InlineImager(BOTH).transform(["p"], _request(), CLAUDE).tool_result_savings


def test_transform_leaves_text_only_models_and_spent_budgets_alone():
    messages = _request()
    text_only = ModelInfo("some-text-model", 100_000, provider="anthropic", input=("text",))
    out = InlineImager(BOTH).transform(["prompt"], messages, text_only)
    assert out.messages == messages and not out.changed
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    full = [{"role": "user", "content": [image] * provider_image_budget("google")}, *messages[1:]]
    out = InlineImager(BOTH).transform(["prompt"], full, GEMINI)
    assert not out.changed
    off = InlineImager(InlineOptions()).transform(["prompt"], messages, GEMINI)
    assert not off.changed


def test_savings_estimate_reports_reasons():
    messages = _request()
    est = estimate_inline_savings(InlineOptions(system_prompt="all", tool_results=True), GEMINI, ["short prompt"],
                                  messages)
    assert est.vision_capable and est.tool_results["total"] == 2 and est.tool_results["swapped"] == 1
    assert est.system_prompt["applied"] is False and est.system_prompt["reason"] == "margin"
    assert est.saved_tokens == est.tool_results["saved_tokens"] > 0
    empty = estimate_inline_savings(InlineOptions(system_prompt="agents-md"), GEMINI, ["no sections"], messages)
    assert empty.system_prompt["reason"] == "empty" and empty.tool_results is None
    assert not estimate_inline_savings(BOTH, ModelInfo("t", 1000, input=("text",)), [], messages).vision_capable


def test_settings_and_bad_values():
    s = merge_settings(DEFAULT_SETTINGS, {"snapcompact": {"systemPrompt": "agents-md", "toolResults": True}})
    assert InlineOptions.from_settings(s.snapcompact) == InlineOptions("agents-md", True, "auto", None)
    assert (DEFAULT_SETTINGS.snapcompact.system_prompt, DEFAULT_SETTINGS.snapcompact.tool_results) == ("none", False)
    with pytest.raises(ValueError, match="snapcompact.systemPrompt must be one of none, agents-md, all, got 'some'"):
        SnapcompactSettings(system_prompt="some")
    with pytest.raises(ValueError, match="snapcompact.toolResults must be true or false, got 'yes'"):
        SnapcompactSettings(tool_results="yes")


def test_pipeline_request_applies_the_settings_without_touching_the_session():
    from snapcompact.compaction import CompactionPipeline, Session

    settings = merge_settings(DEFAULT_SETTINGS, {"snapcompact": {"toolResults": True, "systemPrompt": "all"}})
    p = CompactionPipeline(Session(), GEMINI, settings=settings, system_prompt="You are a careful agent. " * 400)
    for m in _request():
        p.session.append_message(m)
    before = p.context()
    out = inline_request(p)
    assert [c for c, _ in out.tool_result_savings] == ["c1"] and out.system_prompt == (prompt("inline-system-stub"),)
    assert p.context() == before
    plain = CompactionPipeline(Session(), GEMINI)
    for m in _request():
        plain.session.append_message(m)
    assert not inline_request(plain).changed


def test_llm_messages_is_the_request_after_inline_imaging():
    """The agent transforms every provider request (18.3.4 sdk.ts:3932-3953), so what
    ``llm_messages()`` returns, for the pipeline, the maintenance and a replay, is the imaged
    request: the older large result (c1) as note + frames + its own image behind a marker, the
    newest (c2) as text; the prompt's frames lead the first user message and the system prompt
    becomes the stub. Off (the default), the text goes out."""
    from snapcompact.agent import SessionMaintenance, replay_agent_session
    from snapcompact.compaction import CompactionPipeline, Session

    settings = merge_settings(DEFAULT_SETTINGS, {"snapcompact": {"toolResults": True,
                                                                 "systemPrompt": "all"}})
    system = "You are a careful agent. " * 400
    resolved = resolve_shape(GEMINI.id, api=GEMINI.api, provider=GEMINI.provider)
    result_frames = count_frames(BIG + "\n[Source image 1 was attached here in the original tool "
                                       "result.]", resolved.shape)
    prompt_frames = count_frames(system, resolved.shape)
    maint = SessionMaintenance(Session(), GEMINI, settings=settings, system_prompt=system)
    for m in _request():
        maint.append(m)
    for sent in (maint.llm_messages(), maint.pipeline.llm_messages()):
        wire = [m.to_json() for m in sent]
        first = wire[0]["content"]
        assert first[0]["text"] == prompt("inline-system-note")
        assert [b["type"] for b in first[1:1 + prompt_frames]] == ["image"] * prompt_frames
        assert first[-1] == {"type": "text", "text": "please look"}
        c1 = wire[2]["content"]
        assert c1[0]["text"] == prompt("inline-tool-result-note")
        assert [b["type"] for b in c1[1:]] == ["image"] * result_frames + ["text", "image"]
        assert wire[4]["content"] == [{"type": "text", "text": BIG}]
    assert llm_system_prompt(maint.pipeline) == (prompt("inline-system-stub"),)
    # The session still holds the text (the transform is per request, never persisted).
    assert maint.pipeline.context().messages[2]["content"][0]["text"] == BIG
    replay = replay_agent_session(_request(), GEMINI, settings, strategy="full")
    assert [b["type"] for b in replay.llm_messages()[2].to_json()["content"][1:]] == \
        ["image"] * result_frames + ["text", "image"]
    plain = CompactionPipeline(Session(), GEMINI, system_prompt=system)
    for m in _request():
        plain.session.append_message(m)
    assert plain.llm_messages()[2].to_json()["content"][0] == {"type": "text", "text": BIG}
    assert llm_system_prompt(plain) == (system,)
