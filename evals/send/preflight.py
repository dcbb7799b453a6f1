"""Preflight: check every request against the target provider's limits before anything is sent.

Why before: a sweep is sent in an arbitrary order, so a request that breaks a provider limit
(too many images for OpenRouter, a frame over 8000 px for Anthropic, a request over Gemini's
20 MB inline budget, ``detail: "original"`` to a model that does not take it) would otherwise be
refused halfway through, after the requests before it were paid for. Here the whole plan is
checked first and the run stops with one line naming the request, the limit and where the
limit's number comes from (``[[request_limits]]`` of ``snapcompact/pricing/pricing.toml``).

Which limits apply: those of the provider that serves the request (``model.provider``: OpenRouter,
Bedrock...) and those of the vendor whose model it is (a Claude behind OpenRouter still meets
Anthropic's per-image limits). Image sizes are read from the PNG header of each data URL; bytes
are those of the base64 payload, as the limits are stated.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.billing import bill_image, select_rule
from snapcompact.pricing import request_limit

__all__ = ["PreflightError", "RequestFacts", "check_planned", "check_request", "check_routes",
           "data_urls", "request_facts"]

_DETAILS_WITHOUT_RULE = (None, "auto")


class PreflightError(ValueError):
    """A request the target provider would refuse; the message names the limit."""


@dataclass(frozen=True)
class ImageFacts:
    width: int
    height: int
    base64_bytes: int
    detail: str | None


@dataclass(frozen=True)
class RequestFacts:
    """What the limits are about: the images of a request and its approximate size in bytes."""

    images: tuple[ImageFacts, ...]
    request_bytes: int


@functools.lru_cache(maxsize=512)
def _image_size(url: str) -> tuple[int, int, int]:
    """(width, height, base64 bytes) of a ``data:image/...;base64,`` URL (header read only)."""
    from PIL import Image, UnidentifiedImageError

    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise PreflightError(f"image part is not a base64 data URL ({head[:40]!r})")
    try:
        raw = base64.b64decode(data[: 4 * 1024], validate=False)  # the header is at the start
        with Image.open(io.BytesIO(raw)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise PreflightError(f"image part could not be read: {exc}") from None
    return width, height, len(data)


def request_facts(messages: Sequence[Mapping[str, Any]]) -> RequestFacts:
    """Images (size, bytes, detail) and approximate JSON size of OpenAI-format ``messages``."""
    images: list[ImageFacts] = []
    size = 2
    for message in messages:
        content = message.get("content")
        size += 40
        if isinstance(content, str):
            size += len(content.encode())
            continue
        for part in content or ():
            if part.get("type") == "image_url":
                ref = part.get("image_url") or {}
                url = ref.get("url", "")
                width, height, data_bytes = _image_size(url)
                images.append(ImageFacts(width, height, data_bytes, ref.get("detail")))
                size += len(url) + 60
            else:
                size += len(str(part.get("text", "")).encode()) + 30
    return RequestFacts(tuple(images), size)


def _limits_for(target_model: str, provider: str | None, api: str | None
                ) -> list[tuple[str, Any]]:
    vendor = select_rule(target_model, api, provider)[0].vendor
    names = [n for n in dict.fromkeys((provider, vendor)) if n]
    return [(n, lim) for n in names if (lim := request_limit(n)) is not None]


def check_request(messages: Sequence[Mapping[str, Any]], *, target_model: str,
                  provider: str | None, api: str | None = None, label: str = "request") -> None:
    """Raise ``PreflightError`` if ``provider`` (or the model's vendor) would refuse the request."""
    facts = request_facts(messages)
    count = len(facts.images)
    for name, limit in _limits_for(target_model, provider, api):
        where = f"(pricing.toml request_limits, provider {name}; source: {limit.source[:90]})"
        if limit.max_images is not None and count > limit.max_images:
            raise PreflightError(f"{label}: {count} images, but {name} accepts at most "
                                 f"{limit.max_images} per request: max_images {where}")
        if limit.max_request_bytes is not None and facts.request_bytes > limit.max_request_bytes:
            raise PreflightError(f"{label}: about {facts.request_bytes:,} bytes, over {name}'s "
                                 f"{limit.max_request_bytes:,}: max_request_bytes {where}")
        edge_key = "max_edge_over_20_images" if count > 20 else "max_edge"
        max_edge = limit.extra.get(edge_key) or (limit.extra.get("max_edge") if count > 20
                                                 else None)
        for i, image in enumerate(facts.images):
            if limit.max_image_bytes is not None and image.base64_bytes > limit.max_image_bytes:
                raise PreflightError(f"{label}: image {i} is {image.base64_bytes:,} bytes, over "
                                     f"{name}'s {limit.max_image_bytes:,}: max_image_bytes {where}")
            if max_edge and max(image.width, image.height) > max_edge:
                raise PreflightError(f"{label}: image {i} is {image.width}x{image.height} px, "
                                     f"over {name}'s {max_edge} px: {edge_key} {where}")
    for i, image in enumerate(facts.images):
        if image.detail in _DETAILS_WITHOUT_RULE:
            continue
        try:
            bill_image(target_model, image.width, image.height, image.detail, api=api,
                       provider=provider)
        except ValueError as exc:
            raise PreflightError(f"{label}: image {i}: detail {image.detail!r}: {exc}") from None


#: litellm routes that need an optional package before the first request, and the package.
_ROUTE_NEEDS = {"vertex_ai": ("google.auth", "google-auth (pip install 'litellm[google]')")}


def check_routes(model_ids: Iterable[str]) -> None:
    """Refuse a run whose litellm route cannot even build its request on this machine.

    litellm signs Vertex AI requests with a token from google-auth; without the package every
    request fails locally with a connection error, which would be retried as if the network
    were down.
    """
    import importlib.util

    for model_id in dict.fromkeys(model_ids):
        route = model_id.split("/", 1)[0]
        need = _ROUTE_NEEDS.get(route)
        if need is None:
            continue
        module, package = need
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise PreflightError(f"model {model_id!r}: litellm's {route} route needs {package}, "
                                 "which is not installed")


def check_planned(planned: Iterable[Any], model: Any, image_url: Callable[[str], str]) -> int:
    """Check every planned request of a run (``evals.pipeline.plan.Planned``); returns how many."""
    checked = 0
    for p in planned:
        label = (f"request {p.item.item_id}/{p.question_id} (arm {p.context.arm.label}, "
                 f"{len(p.context.frame_hashes)} frames)")
        check_request(p.messages(image_url), target_model=model.target_model,
                      provider=model.provider, api=model.api, label=label)
        checked += 1
    return checked


def data_urls(store: Any) -> Callable[[str], str]:
    """Frame hash -> ``data:image/png;base64,...`` from a ``FrameStore`` (recently used cached)."""

    @functools.lru_cache(maxsize=256)
    def image_url(digest: str) -> str:
        return "data:image/png;base64," + base64.b64encode(store.get(digest)).decode("ascii")

    return image_url
