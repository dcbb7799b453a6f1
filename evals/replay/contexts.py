"""One (session, arm) -> the context production would send next, with its bill.

Why a module of its own: this is the step that makes the harness a validation. Nothing here
re-implements production: the session is replayed by :func:`snapcompact.agent.
replay_agent_session`, the coding agent's own maintenance (its check points, method order,
window-sized frame cap, guards, recovery band and rescues, at ``context_window``), the question
runs the pre-prompt check as a new user message does, the next turn is ``llm_messages()``
turned into a chat request by :func:`snapcompact.compaction.chat.to_chat_messages`, and its bill is
:func:`snapcompact.billing.bill_request` for the target model. The harness adds
only the question, as the next user message.

Frames go to the :class:`~evals.store.records.FrameStore` by content hash; the context is kept with
each image's URL replaced by a placeholder (a sweep holds hashes, not megabytes), and the send
step puts the data back, frame by frame, in order. The response cache keys on each frame's
decoded pixels (``pixel_hashes``, :mod:`evals.store.pixel_keys`), not on its PNG bytes, so another
deflate level or zlib build never turns a cached answer into a paid request.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.items.prompts import question_text
from evals.items.sessions import SessionItem
from evals.replay.compaction_bill import CallRecorder, ChatRecorder, stand_in_chat
from evals.replay.perfect_summary import perfect_chat, perfect_summarizer
from evals.spec.run_spec import TEXT_ARM, ArmSpec, ModelSpec, RunSpec
from evals.store.pixel_keys import pixel_digest
from evals.store.records import ContextStore, FrameStore
from snapcompact.agent import (
    LLM_METHODS,
    AgentReplay,
    agent_settings,
    frame_shape_name,
    frames_by_shape,
    replay_agent_session,
)
from snapcompact.archive import history_blocks
from snapcompact.billing import (
    NO_CALLS,
    NO_TURNS,
    CompactionBill,
    CompactionCall,
    SessionBill,
    bill_calls,
    bill_request,
    bill_turns,
    stable_prefix_of,
)
from snapcompact.compaction import (
    ModelInfo,
    to_chat_messages,
    tool_definitions,
    user_question,
)
from snapcompact.pricing import prompt_cache_rule

PLACEHOLDER_URL = "data:image/png;base64,"

__all__ = ["PLACEHOLDER_URL", "Context", "build_context", "compaction_model", "fill_images",
           "full_history_tokens", "model_info"]


@dataclass(frozen=True)
class Context:
    """The request of one (item, arm) before the question, and everything rows report on it."""

    arm: ArmSpec
    shape: str  # the shape drawn ("text" when no frame is sent)
    frame_size: int  # px of the frames drawn (0 when none)
    messages: tuple[Mapping[str, Any], ...]  # chat messages, image URLs as placeholders
    tools: tuple[Mapping[str, Any], ...]  # declarations of the tools the context calls
    frame_hashes: tuple[str, ...]
    frame_px: tuple[tuple[int, int], ...]
    seen_px: tuple[tuple[int, int], ...]
    image_tokens: tuple[int, ...]
    bill_rules: tuple[str, ...]
    text_tokens_without_question: int  # the context's text; the question is added per request
    text_token_method: str
    compactions: int
    frames_evicted: int
    text_tail_chars: int
    compaction_cost_tokens: int  # what the summarizer reported as its usage (not the bill)
    discarded_round: tuple[int, ...]  # per session message
    context_hash: str
    replay_warnings: tuple[str, ...]
    skipped: str | None = None
    pixel_hashes: tuple[str, ...] = ()  # per frame: store.pixel_keys.pixel_digest (cache keys)
    #: What the agent's maintenance did: accepted method -> passes ("none": every method failed).
    methods_used: Mapping[str, int] | None = None
    frame_cap: int | None = None  # the largest frame cap a pass was given (None: never sized)
    frames_by_shape: Mapping[str, int] | None = None  # frames sent, by the shape drawn
    context_tokens_estimate: int = 0  # the agent's own count of the context (+ the question)
    fits_window: bool = True  # the context (as billed and as counted) fits the window
    #: True: production would send this context; False: it would not (``production_note`` says
    #: why); None: a labelled bound (``full``, ``truncate``), not a production method.
    production_valid: bool | None = None
    production_note: str | None = None
    replay_warnings_total: int = 0
    agent_token_method: str | None = None  # how the agent's maintenance counted text
    passes: tuple[Mapping[str, Any], ...] = ()  # every maintenance pass (MaintenanceRound JSON)
    stable_prefix_tokens: int | None = None  # head unchanged since the previous compaction
    truncated_chars: int = 0  # archive characters dropped (neither framed nor kept as text)
    #: an LLM method (handoff, soft) ran with the offline summarizer stand-in: the context is on
    #: production's path but holds the stand-in's fixed text where an LLM's summary would be
    summary_stand_in: bool = False
    #: sha256 of what the context sends (messages, tool declarations, frames' PNG hashes), the
    #: question excluded: two arms with the same value send byte-identical contexts
    sent_hash: str = ""
    #: the label of an earlier arm of the same item whose context is byte-identical (the plan
    #: asks once and records this arm as the same measurement); None: a context of its own
    same_context_as: str | None = None
    #: the shape the arm asked for (resolved: ``auto`` -> the shape production picks) and
    #: whether any frame was drawn in it (False also when the arm drew no frame at all: its
    #: recall then measures no shape; None: not a snapcompact arm)
    shape_asked: str = ""
    shape_asked_drawn: bool | None = None
    #: the compaction calls this replay made (summary / handoff requests), counted as billed:
    #: the session's, paid once whatever the number of questions asked after the context
    compaction_bill: CompactionBill = NO_CALLS
    #: the session's whole history billed for the target, the question excluded: the ``full``
    #: arm's context, the compression baseline of every arm of the session (None: not known)
    full_history_tokens: int | None = None
    #: every request the agent sent for its replies after its first compaction, counted for the
    #: target (the session's, paid once; ``snapcompact.billing.bill_turns``, cache applied)
    session_bill: SessionBill = NO_TURNS

    @property
    def predicted_image_tokens(self) -> int:
        return sum(self.image_tokens)


def model_info(spec: RunSpec):
    """The pipeline's model facts for the target, at the run's context window."""
    model = spec.model
    return ModelInfo(id=model.target_model, context_window=spec.context_window,
                     provider=model.provider, api=model.api,
                     include_thinking=not (model.api or "").startswith("anthropic"))


def _usage_tokens(usage: Mapping[str, Any] | None) -> int:
    if not usage:
        return 0
    total = 0
    for key in ("input", "output", "prompt_tokens", "completion_tokens", "input_tokens",
                "output_tokens"):
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def _archive_text_chars(archive: Any | None) -> int:
    """Characters of archive text sent as text (head and tail edges, the pinned policy's
    unframed tail, gap notices): the text blocks :func:`snapcompact.archive.history.history_blocks`
    puts beside the frames."""
    if archive is None:
        return 0
    return sum(len(b.get("text", "")) for b in history_blocks(archive)
               if b.get("type") == "text")


def _keyed(messages: Sequence[Mapping[str, Any]], store: FrameStore | None
           ) -> tuple[list[dict[str, Any]], list[str], list[bytes]]:
    """Messages with image URLs swapped for placeholders; the frames' hashes and bytes."""
    out = copy.deepcopy(list(messages))
    hashes: list[str] = []
    pngs: list[bytes] = []
    for message in out:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") != "image_url":
                continue
            url = part["image_url"]["url"]
            png = base64.b64decode(url.split(",", 1)[1])
            hashes.append(store.put(png) if store is not None else FrameStore.digest(png))
            pngs.append(png)
            part["image_url"]["url"] = PLACEHOLDER_URL
    return out, hashes, pngs


def _stored_context(messages: Sequence[Mapping[str, Any]], hashes: Sequence[str],
                    bills: Sequence[Any]) -> dict[str, Any]:
    """The context as the viewer reads it: image parts by frame hash, size and bill."""
    frames = iter(zip(hashes, bills))
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image_url":
                    digest, bill = next(frames)
                    parts.append({"type": "image", "frame_hash": digest, "width": bill.width,
                                  "height": bill.height, "seen_width": bill.seen_width,
                                  "seen_height": bill.seen_height, "tokens": bill.tokens})
                else:
                    parts.append(dict(part))
            out.append({**message, "content": parts})
        else:
            out.append(dict(message))
    return {"messages": out}


def build_context(item: SessionItem, arm: ArmSpec, spec: RunSpec, *,
                  frames: FrameStore | None, contexts: ContextStore | None,
                  complete: Callable[..., Any] | None = None,
                  model_window: int | None = None) -> Context:
    """Replay ``item`` under ``arm`` and bill the next turn's context for the target.

    ``model_window``: the target model's own input window (``evals.send.price_map.
    model_window``); only the ``full`` arm is measured against it (skipped when over).
    """
    model = spec.model
    # The question is the next user message: the pre-prompt check runs for it (the longest of
    # the item's questions, so the check holds for every one of them).
    longest = max((q.question for q in item.questions), key=len)
    final_prompt = user_question(question_text(longest))
    replay, calls = _replayed(item, arm, spec, complete, final_prompt)
    maint = replay.maintenance
    chat, tools, bill = _billed_chat(replay, spec, f"{item.item_id} {arm.label}")
    keyed, hashes, pngs = _keyed(chat, frames)
    # every maintenance pass beside the context it produced: the report reads per-round
    # methods, rejections, frame caps and frames by shape from here (records keep the totals)
    passes = tuple(p.to_json() for p in replay.passes)
    context_hash = _store(contexts, keyed, hashes, bill, tools, passes)
    wanted, drawn_names = _frame_shapes(replay, arm)
    names = sorted(set(drawn_names))
    sizes = {b.width for b in bill.images}
    counted = (maint.view.stored_tokens([final_prompt]) if maint is not None
               else bill.billed_tokens)
    fits = max(counted, bill.billed_tokens) <= spec.context_window
    llm_methods = sorted(m for m in replay.methods_used() if m in LLM_METHODS)
    stand_in = spec.summarizer is not None and spec.summarizer.stand_in and bool(llm_methods)
    valid, note = _production_verdict(replay, arm, fits, counted, bill.billed_tokens,
                                      spec.context_window,
                                      stand_in_methods=llm_methods if stand_in else (),
                                      oracle=spec.summarizer.oracle if spec.summarizer else None)
    archive = replay.final_archive()
    caps = [a.frame_cap.max_frames for p in replay.passes for a in p.attempts
            if a.frame_cap is not None]
    return Context(
        arm=arm, shape=("+".join(names) if names else TEXT_ARM) if hashes else TEXT_ARM,
        frame_size=max(sizes) if sizes else 0,
        messages=tuple(keyed), tools=tuple(tools), frame_hashes=tuple(hashes),
        frame_px=tuple((b.width, b.height) for b in bill.images),
        seen_px=tuple((b.seen_width, b.seen_height) for b in bill.images),
        image_tokens=tuple(b.tokens for b in bill.images),
        bill_rules=tuple(sorted({b.rule_id for b in bill.images})),
        text_tokens_without_question=bill.text_tokens, text_token_method=bill.text_token_method,
        compactions=replay.compactions,
        frames_evicted=max(0, replay.frames_seen() - replay.frames_in_archive()),
        text_tail_chars=_archive_text_chars(archive),
        compaction_cost_tokens=_usage_tokens(replay.llm_usage),
        discarded_round=replay.discarded_round, context_hash=context_hash,
        replay_warnings=replay.warnings,
        skipped=_full_skipped(arm, bill.billed_tokens, model_window, model.target_model),
        pixel_hashes=tuple(pixel_digest(png) for png in pngs),
        methods_used=replay.methods_used(), frame_cap=max(caps) if caps else None,
        frames_by_shape=(frames_by_shape(archive.frames) if archive is not None and hashes
                         else {}),
        context_tokens_estimate=counted, fits_window=fits, production_valid=valid,
        production_note=note,
        replay_warnings_total=len(maint.notices) if maint is not None else 0,
        agent_token_method=maint.view.text_token_method if maint is not None else None,
        passes=passes,
        truncated_chars=archive.truncated_chars if archive is not None else 0,
        summary_stand_in=stand_in,
        sent_hash=_sent_hash(keyed, tools, hashes), shape_asked=wanted,
        shape_asked_drawn=(wanted in names) if wanted else None,
        stable_prefix_tokens=_stable_prefix(replay, chat, bill, model.target_model),
        compaction_bill=_compaction_bill(calls, spec, replay.methods_used()),
        session_bill=bill_turns(prompt_cache_rule(model.target_model, api=model.api),
                                replay.turn_requests))


def full_history_tokens(item: SessionItem, spec: RunSpec) -> int:
    """The session's whole history billed for the target (the question excluded), as the
    ``full`` arm's context is: every arm's compression baseline, computed from the session when
    the run has no ``full`` arm (a shape sweep)."""
    longest = max((q.question for q in item.questions), key=len)
    replay, _ = _replayed(item, ArmSpec("full"), spec, None,
                          user_question(question_text(longest)))
    _, _, bill = _billed_chat(replay, spec, f"{item.item_id} full history")
    return int(bill.billed_tokens)


def _replayed(item: SessionItem, arm: ArmSpec, spec: RunSpec,
              complete: Callable[..., Any] | None, final_prompt: Mapping[str, Any]
              ) -> tuple[AgentReplay, list[CompactionCall]]:
    """The agent's maintenance over the session at the arm's settings, and the summarizer's
    calls, in call order (for ``summarizer=perfect``, the oracle's: the same maintenance path;
    only the summary text is the oracle's).

    Where the library ships the agent's own system prompt (:func:`_agent_prompt`), the
    maintenance is given the agent's request parts, that prompt and the tools the session
    calls, so its counts carry them (as the agent's ``computeNonMessageTokens`` does) and a
    handoff is asked of the live conversation (``generate_handoff_live``), as the agent asks it
    (``session-handoff.ts:127-172``), through :func:`_live_chat`. Without it the replay is the
    one before (no request parts; a handoff asked of a transcript)."""
    shape = arm.shape if arm.is_snapcompact else None
    settings = agent_settings(
        arm.strategy, spec.settings(),
        shape=shape.name if shape is not None else None,
        policy=arm.policy or None,
        frame_size=shape.frame_size if shape is not None else None)
    if spec.summarizer is not None and spec.summarizer.oracle == "perfect":
        complete = perfect_summarizer(q.evidence for q in item.questions)
    recorder = CallRecorder(complete) if complete is not None else None
    calls = recorder.calls if recorder is not None else []
    info = model_info(spec)
    system_prompt = _agent_prompt(info)
    chat = _live_chat(item, spec, complete) if system_prompt is not None else None
    live = ChatRecorder(chat, calls) if chat is not None else None
    with warnings.catch_warnings():  # fallbacks are kept in replay.warnings and the rows
        warnings.simplefilter("ignore", RuntimeWarning)
        replay = replay_agent_session(item.messages, info, settings,
                                      strategy=arm.strategy, complete=recorder,
                                      final_prompt=final_prompt, system_prompt=system_prompt,
                                      tools=(_session_tools(item.messages)
                                             if system_prompt is not None else None),
                                      chat=live, turns_for=spec.model.target_model,
                                      image_detail=spec.model.image_detail)
    return replay, calls


def _session_tools(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A declaration of every tool the session calls (the agent's tools, as the question's
    request declares them: :func:`snapcompact.compaction.tool_definitions`)."""
    calls = [{"function": {"name": block.get("name")}} for m in messages
             if m.get("role") == "assistant" and isinstance(m.get("content"), list)
             for block in m["content"]
             if isinstance(block, Mapping) and block.get("type") == "toolCall"]
    return tool_definitions([{"tool_calls": calls}])


def _agent_prompt(info: ModelInfo) -> str | None:
    """The coding agent's own system prompt for the target (``snapcompact.agent.AGENT_PROMPT``,
    kept as data by issue 45 item 3)."""
    from snapcompact.agent import AGENT_PROMPT

    return AGENT_PROMPT.text(info)


def _live_chat(item: SessionItem, spec: RunSpec,
               complete: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """The ``chat`` a handoff asks of the live conversation: the perfect oracle's over the
    live messages, or a stand-in's fixed text; None for a real summarizer (its handoff is
    then asked of a transcript under the summarizer prompt, billed at its own model)."""
    summarizer = spec.summarizer
    if summarizer is None or not summarizer.stand_in:
        return None
    if summarizer.oracle == "perfect":
        return perfect_chat(q.evidence for q in item.questions)
    return stand_in_chat(complete) if complete is not None else None


def compaction_model(spec: RunSpec) -> ModelSpec:
    """The model line that pays a replay's compaction calls: the agent hands off and summarizes
    with the session's model (``session-handoff.ts:119``; a soft summary's first candidate is
    the compaction target configured for it, else the session's model,
    ``session-maintenance.ts:3325-3348``), so the target's, unless a real summarizer is
    configured (a stand-in or an oracle stands for the session's model)."""
    summarizer = spec.summarizer
    if summarizer is None or summarizer.stand_in:
        return spec.model
    return summarizer


def _billed_chat(replay: AgentReplay, spec: RunSpec, label: str
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """The next request as chat messages (the model config's image detail applied), the tools
    it declares and its bill for the target; refused past ``max_frames``."""
    model = spec.model
    chat = to_chat_messages(replay.llm_messages())
    if model.image_detail is not None:
        _override_detail(chat, model.image_detail)
    tools = tool_definitions(chat)
    bill = bill_request(chat, model.target_model, api=model.api, provider=model.provider,
                        tools=tools)
    images = sum(1 for m in chat for p in m.get("content") or ()
                 if isinstance(p, dict) and p.get("type") == "image_url")
    if images > spec.max_frames:  # the archive keeps the provider's budget; this guards typos
        raise ValueError(f"{label}: the context carries {images:,} frames, "
                         f"more than max_frames={spec.max_frames:,}")
    return chat, tools, bill


def _store(contexts: ContextStore | None, keyed: Sequence[Mapping[str, Any]],
           hashes: Sequence[str], bill: Any, tools: Sequence[Mapping[str, Any]],
           passes: Sequence[Mapping[str, Any]]) -> str:
    """The context (and its passes) put in the context store; its hash ("" without a store)."""
    stored = _stored_context(keyed, hashes, bill.images)
    if tools:
        stored["tools"] = tools
    stored["passes"] = list(passes)
    return contexts.put(stored) if contexts is not None else ""


def _full_skipped(arm: ArmSpec, billed: int, model_window: int | None,
                  target_model: str) -> str | None:
    """Why the ``full`` arm is not asked: the whole history exceeds the model's own window."""
    if arm.strategy != "full" or model_window is None or billed <= model_window:
        return None
    return (f"the whole history ({billed:,} tokens) exceeds "
            f"{target_model}'s window of {model_window:,} input tokens")


def _compaction_bill(calls: Sequence[CompactionCall], spec: RunSpec,
                     methods: Mapping[str, int]) -> CompactionBill:
    """The replay's summary and handoff requests, counted for :func:`compaction_model` (its
    prompt cache applied), with a note when the figure is an estimate rather than a real
    request's bill."""
    notes = []
    if "remote" in methods:  # never in the harness: build_context injects no remote endpoint
        notes.append("a remote compaction ran; its request did not go through the summarizer "
                     "and is not billed here")
    summarizer = spec.summarizer
    if calls and summarizer is not None:
        if summarizer.oracle == "perfect":
            notes.append("estimate: the requests the perfect summarizer was given, as a real "
                         "request would carry them, and its oracle summary as the output")
        elif summarizer.stand_in:
            notes.append("estimate: the real requests' input, the stand-in's fixed text as the "
                         "output (a real summary is longer)")
        elif spec.dry_run:
            notes.append("estimate: a dry run's placeholder as the output")
    target = compaction_model(spec)
    bill = bill_calls(calls, target.target_model, api=target.api, provider=target.provider)
    return replace(bill, note="; ".join(notes) or None)


def _stable_prefix(replay: Any, chat: Any, bill: Any, target_model: str) -> int:
    """Tokens at the head of ``chat`` unchanged since the previous compaction's context
    (:func:`snapcompact.billing.stable_prefix_of` over the replay's live branch)."""
    return stable_prefix_of(replay.pipeline.session.get_branch(), chat, bill, target_model)


def _production_verdict(replay: Any, arm: ArmSpec, fits: bool, counted: int, billed: int,
                        window: int, *, stand_in_methods: Sequence[str] = (),
                        oracle: str | None = None) -> tuple[bool | None, str | None]:
    """Would production send this context? (True / False with why / None for the bounds).

    ``stand_in_methods``: the LLM methods that ran with the offline summarizer stand-in;
    ``oracle="perfect"``: that stand-in was the perfect summarizer (a ceiling, not a floor).
    Production takes the same path but sends its LLM's summary, not the stand-in's fixed text,
    so the row is not production's context: False, with the methods named.
    """
    if arm.strategy in ("full", "truncate"):
        note = ("upper bound: the whole history, production compacts" if arm.strategy == "full"
                else "lower bound: production's cut points, the discarded part dropped")
        if not fits:
            note += f"; over the {window:,}-token window"
        return None, note
    reasons = []
    if arm.is_snapcompact and arm.policy == "pinned":
        reasons.append("pinned policy: the seed's design, no production version runs it")
    if replay.offline_divergence:
        reasons.append("production would have run an LLM method (handoff / soft) this offline "
                       "run could not")
    if stand_in_methods and oracle == "perfect":
        reasons.append(f"production's path, but its {' / '.join(stand_in_methods)} summary was "
                       "written by the perfect summarizer (an oracle keeping every evidence line "
                       "it was shown): recall on what that summary would carry is a ceiling")
    elif stand_in_methods:
        reasons.append(f"production's path, but its {' / '.join(stand_in_methods)} summary was "
                       "written by the offline stand-in (no language model): recall on what that "
                       "summary would carry is a floor")
    if not fits:
        reasons.append(f"over the {window:,}-token window ({max(counted, billed):,} tokens)")
    return (False, "; ".join(reasons)) if reasons else (True, None)


def _override_detail(messages: Sequence[dict[str, Any]], detail: str) -> None:
    """The model config's ``image_detail`` replaces the detail production wrote on each frame.

    A documented deviation, for models whose provider rejects the family default (the archive
    writes ``original`` for every OpenAI model; tile-billed ones such as gpt-5 only take
    low/high/auto). Rows record it in ``extra.image_detail``.
    """
    for message in messages:
        for part in message.get("content") or ():
            if isinstance(part, dict) and part.get("type") == "image_url":
                part["image_url"]["detail"] = detail


def _frame_shapes(replay: AgentReplay, arm: ArmSpec) -> tuple[str, list[str]]:
    """The shape the arm asked for (resolved by the library's replay, which drew with it) and
    the shape names of the frames in the final archive, as drawn (the foveated middle is drawn
    in the dense companion whatever shape was asked for; see
    :func:`snapcompact.agent.frame_shape_name`). ("", []) for other arms."""
    if not arm.is_snapcompact:
        return "", []
    wanted = replay.shape_asked
    archive = replay.final_archive()
    if archive is None:
        return wanted, []
    return wanted, [frame_shape_name(frame, wanted) for frame in archive.frames]


def _sent_hash(keyed: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
               frame_hashes: Sequence[str]) -> str:
    """sha256 of what a context sends, the question excluded (see ``Context.sent_hash``)."""
    payload = json.dumps({"messages": list(keyed), "tools": list(tools),
                          "frames": list(frame_hashes)}, sort_keys=True, ensure_ascii=False,
                         separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fill_images(messages: Sequence[Mapping[str, Any]], hashes: Sequence[str],
                data_url: Callable[[str], str]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with the placeholder image URLs filled in, in order."""
    frames = iter(hashes)
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            parts = []
            for part in content:
                if part.get("type") == "image_url":
                    ref = {**part["image_url"], "url": data_url(next(frames))}
                    parts.append({**part, "image_url": ref})
                else:
                    parts.append(part)
            out.append({**message, "content": parts})
        else:
            out.append(message)  # type: ignore[arg-type]
    return out
