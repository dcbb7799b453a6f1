"""What a session costs after its first compaction: every request the agent sends, cache applied.

Why: a question's bill is one request. A session pays its context again on every turn that
follows a compaction, up to the next one, at the provider's prompt-cache prices (the request
before each one cached its prompt, so the next reads it and writes only what is new; the first
request after a compaction reads only what the compaction left unchanged at the head), plus the
replies it gets (output tokens) and the compaction calls themselves
(:mod:`.compaction_calls`). A strategy that compacts more often, or rewrites the head each time,
pays more here than its per-question prompt shows.

:func:`bill_turns` sums :class:`TurnRequest` figures gathered by whoever walks the session
(``snapcompact.agent.turn_requests`` during a replay) into a :class:`SessionBill`, each request
split by :func:`.cache_use.follow_on_use`. Token figures only; dollars are the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from snapcompact.billing.cache_use import CacheUse, follow_on_use
from snapcompact.pricing import PromptCacheRule

__all__ = ["NO_TURNS", "SessionBill", "TurnRequest", "bill_turns"]


@dataclass(frozen=True)
class TurnRequest:
    """One request the agent sent for a reply: its whole prompt, the tokens at its head that
    the request before it cached, and the reply's tokens."""

    prompt_tokens: int
    cached_prefix_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class SessionBill:
    """The turn requests of one (session, arm) after its first compaction, cache applied."""

    requests: int
    input_tokens: int  # every request's whole prompt
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int

    @property
    def cache_use(self) -> CacheUse:
        """The requests' input split as the provider bills it."""
        return CacheUse(uncached=self.input_tokens - self.cache_read_tokens
                        - self.cache_write_tokens,
                        written=self.cache_write_tokens, read=self.cache_read_tokens)


#: A session that sent no request after a compaction (none ran, or it ended there).
NO_TURNS = SessionBill(requests=0, input_tokens=0, cache_read_tokens=0, cache_write_tokens=0,
                       output_tokens=0)


def bill_turns(rule: PromptCacheRule | None, turns: Sequence[TurnRequest]) -> SessionBill:
    """Sum ``turns`` (sent in order, each within the cache lifetime of the one before)."""
    inputs = read = written = outputs = 0
    for turn in turns:
        use = follow_on_use(rule, min(turn.cached_prefix_tokens, turn.prompt_tokens),
                            turn.prompt_tokens)
        inputs += use.prompt_tokens
        read += use.read
        written += use.written
        outputs += turn.output_tokens
    return SessionBill(requests=len(turns), input_tokens=inputs, cache_read_tokens=read,
                       cache_write_tokens=written, output_tokens=outputs)
