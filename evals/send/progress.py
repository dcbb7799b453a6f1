"""Running counters of a client (requests sent, cache hits, retries, tokens, dollars) and the
tqdm bar that shows them.

Why a module: the counters are what a sweep's operator watches and what the run's console
summary prints; they are a view of the client's work, apart from how it sends. The bar, the
end line and the job log name them one way (:meth:`Progress.counts`): ``sent`` (HTTP requests,
retries included), ``cache hits`` (answered from the response cache), ``shared`` (answered by
an identical request in flight), ``retries`` (requests sent again after a retryable failure;
each is logged with its cause by the client), ``errors``. The bar shows no time left until
the first answer came from the model: before it, the rate is the reader's warm-up (an OCR
reader's first frames) or the cache's, and the estimate would be hours off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Progress:
    """Running counters of one client; listeners are called after every change."""

    completed: int = 0
    requests_sent: int = 0
    cache_hits: int = 0
    dedup_hits: int = 0
    claim_waits: int = 0  # requests answered by another process holding the claim
    cache_write_errors: int = 0
    retries: int = 0
    errors: int = 0
    budget_refusals: int = 0
    token_waits: int = 0  # sends that waited for the input-tokens-per-minute limit
    token_wait_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    listeners: list[Callable[[Progress], None]] = field(default_factory=list, repr=False)

    def notify(self) -> None:
        for listener in self.listeners:
            listener(self)

    def counts(self) -> dict[str, int]:
        """The counters by the names the bar, the end line and the log use, in their order."""
        return {"sent": self.requests_sent, "cache hits": self.cache_hits,
                "shared": self.dedup_hits, "retries": self.retries, "errors": self.errors}

    @property
    def measured(self) -> int:
        """Questions answered by the model in this process (not the cache, not shared, not
        failed): until one is, there is no rate to estimate the time left from."""
        return self.completed - self.cache_hits - self.dedup_hits - self.errors

    def summary(self) -> str:
        counts = ", ".join(f"{n} {name}" for name, n in self.counts().items())
        text = (f"{self.completed} done, {counts}, "
                f"{self.prompt_tokens + self.completion_tokens:,} tok, ${self.cost_usd:.4f}")
        if self.token_waits:
            text += (f", {self.token_waits} waited {self.token_wait_s:,.1f} s for the "
                     "tokens-per-minute limit")
        if self.cache_write_errors:
            text += (f" (WARNING: {self.cache_write_errors} answers could not be cached; they "
                     "are kept in the records only)")
        return text


#: The bar before the first answer from the model: elapsed time, no estimate of the time left.
NO_ETA_FORMAT = ("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, time left: after the first "
                 "answer{postfix}]")


class ProgressBar:
    """tqdm bar over a ``Progress``: completed/total, with the counters (:meth:`Progress.counts`),
    tokens and dollars; the time left only once the model has answered."""

    def __init__(self, progress: Progress, total: int, desc: str = "eval", **tqdm_kwargs: Any):
        from tqdm.auto import tqdm

        self.progress = progress
        self._start = progress.completed
        self._measured = progress.measured
        self._bar = tqdm(total=total, desc=desc, unit="q", bar_format=NO_ETA_FORMAT,
                         **tqdm_kwargs)
        progress.listeners.append(self._update)

    def _update(self, progress: Progress) -> None:
        done = progress.completed - self._start
        if progress.measured > self._measured and self._bar.bar_format == NO_ETA_FORMAT:
            self._bar.bar_format = None  # tqdm's own: elapsed < left, rate
        self._bar.set_postfix(
            {**progress.counts(),
             "tok": f"{progress.prompt_tokens + progress.completion_tokens:,}",
             "usd": f"{progress.cost_usd:.4f}"},
            refresh=False,
        )
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._update in self.progress.listeners:
            self.progress.listeners.remove(self._update)
        self._update(self.progress)
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
