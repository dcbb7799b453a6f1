"""Run model configs end to end against the wire twins, and tabulate billing drift.

Why: this is the first run with keys, rehearsed offline. Each ``configs/model/*.yaml`` that calls
a real provider is composed with an experiment (``smoke`` by default), its ``api_base`` pointed
at that provider's twin and its keys set to dummies (Vertex: a throwaway service-account key
file the token twin trusts, ``evals.twins.vertex``), and run through the real harness
(``evals.pipeline.run.run_config``: plan, preflight, litellm, records). The rows then carry the
twin's reported tokens, and ``drift_rows`` sets them beside the prediction of
``snapcompact.pricing.billing``, per request and per frame.

``python -m evals.twins.smoke [config ...] [--experiment smoke]`` prints the drift table.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir

from evals.pipeline.run import run_config
from evals.spec.config_files import CONFIG_DIR
from evals.store.records import iter_records
from evals.twins.anthropic import AnthropicTwin
from evals.twins.bedrock import BedrockConverseTwin
from evals.twins.gemini import GeminiTwin
from evals.twins.openai import OpenAITwin
from evals.twins.server import Exchange, TwinServer
from evals.twins.vertex import (
    GoogleOAuthTwin,
    VertexClaudeTwin,
    VertexGeminiTwin,
    throwaway_service_account,
)

__all__ = [
    "TWIN_OF_ROUTE",
    "UNREACHABLE",
    "WORKAROUNDS",
    "DriftRow",
    "all_twins",
    "drift_rows",
    "dummy_env",
    "format_drift_table",
    "real_provider_configs",
    "run_against_twin",
    "twin_for",
]


#: litellm route (prefix of ``litellm_id``) -> twin name. Vertex serves two wires: Claude
#: models go to ``VERTEX_CLAUDE_TWIN`` (rawPredict), the rest to "vertex" (generateContent).
TWIN_OF_ROUTE = {"anthropic": "anthropic", "openai": "openai", "gemini": "gemini",
                 "openrouter": "openrouter", "zai": "zai", "moonshot": "moonshot",
                 "bedrock": "bedrock", "vertex_ai": "vertex"}
VERTEX_CLAUDE_TWIN = "vertex-anthropic"
#: litellm routes no twin can serve offline, and why (none since the Vertex twins).
UNREACHABLE: dict[str, str] = {}
#: per litellm route, overrides a run needs before its requests can reach the provider at all.
#: Bedrock: the harness asks every question with ``tool_choice="none"`` (the context's tools are
#: declared, none may be called), but Converse's ``toolChoice`` has only auto/any/tool, and
#: litellm refuses the whole call ("Bedrock doesn't support tool_choice=none") unless told to
#: drop the parameter. Dropped, the request declares the tools with Converse's default (auto).
WORKAROUNDS: dict[str, tuple[str, ...]] = {}  # none needed since the pipeline leaves
# tool_choice out for Bedrock (Converse has no "none")


def all_twins() -> TwinServer:
    """One server with every twin (not started)."""
    return TwinServer(
        AnthropicTwin(), BedrockConverseTwin(), OpenAITwin(), GeminiTwin(),
        OpenAITwin(name="openrouter", prefix="/openrouter/api/v1", flavour="openrouter"),
        OpenAITwin(name="zai", prefix="/zai/api/paas/v4", flavour="zai"),
        OpenAITwin(name="moonshot", prefix="/moonshot/v1", flavour="moonshot"),
        GoogleOAuthTwin(), VertexGeminiTwin(), VertexClaudeTwin(),
    )


def _model_config(name: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((CONFIG_DIR / "model" / f"{name}.yaml").read_text())


def real_provider_configs() -> list[str]:
    """Model configs that call a provider over the network (not offline, mock or loopback)."""
    names = []
    for path in sorted((CONFIG_DIR / "model").glob("*.yaml")):
        cfg = _model_config(path.stem)
        params = cfg.get("params") or {}
        if cfg.get("provider") and not cfg.get("offline_reader") \
                and "mock_response" not in params and "api_base" not in params:
            names.append(path.stem)
    return names


def _route(config: str) -> str:
    return _model_config(config)["litellm_id"].split("/", 1)[0]


def twin_for(config: str) -> str | None:
    """The twin that serves a model config, or None (see ``UNREACHABLE``)."""
    route = _route(config)
    if route == "vertex_ai" and "/claude" in _model_config(config)["litellm_id"]:
        return VERTEX_CLAUDE_TWIN
    return TWIN_OF_ROUTE.get(route)


def dummy_env(config: str) -> dict[str, str]:
    """Dummy values for the config's ``required_env`` (never a real key; the twins take any)."""
    values = {"AWS_REGION_NAME": "us-east-1", "VERTEXAI_LOCATION": "us-central1",
              "VERTEXAI_PROJECT": "twin-project"}
    return {name: values.get(name, f"twin-dummy-{name.lower()}-0000")
            for name in _model_config(config).get("required_env") or []}


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def run_against_twin(config: str, server: TwinServer, results_dir: Path, *,
                     experiment: str = "smoke", overrides: Sequence[str] = (),
                     workarounds: bool = True) -> Any:
    """Run ``config`` x ``experiment`` through the harness with ``api_base`` at its twin
    (with the route's ``WORKAROUNDS`` unless ``workarounds`` is False)."""
    twin = twin_for(config)
    if twin is None:
        raise ValueError(f"model config {config!r} has no twin: "
                         f"{UNREACHABLE.get(_model_config(config)['litellm_id'].split('/')[0])}")
    results_dir = Path(results_dir)
    args = [f"model={config}", f"experiment={experiment}", f"results_dir={results_dir}",
            "progress=false", f"++model.params.api_base={server.api_base(twin)}",
            *(WORKAROUNDS.get(_route(config), ()) if workarounds else ()), *overrides]
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("eval", overrides=args)
    with _credentials(config, server) as env, _environment(env):
        return run_config(cfg, results_dir / "runs" / config, base_dir=results_dir)


@contextlib.contextmanager
def _credentials(config: str, server: TwinServer) -> Iterator[dict[str, str]]:
    """The config's dummy environment; for Vertex, a throwaway service-account key file (in a
    scratch directory outside the results, deleted after the run) that the token twin trusts."""
    env = dummy_env(config)
    if _route(config) != "vertex_ai":
        yield env
        return
    oauth = server["google-oauth"]
    token_uri = server.api_base("google-oauth") + "/token"
    with tempfile.TemporaryDirectory(prefix="twin-credentials-") as scratch:
        path = throwaway_service_account(Path(scratch), oauth, token_uri,
                                         env["VERTEXAI_PROJECT"])
        yield {**env, "GOOGLE_APPLICATION_CREDENTIALS": str(path)}


@dataclass(frozen=True)
class DriftRow:
    """One recorded request beside what its twin billed for it."""

    config: str
    twin: str
    reader: str
    shape: str
    frame_px: tuple[tuple[int, int], ...]
    predicted_image_tokens: tuple[int, ...]  # snapcompact.pricing.billing, per frame
    twin_image_tokens: tuple[int, ...] | None  # the twin's reading; None: no documented rule
    predicted_prompt_tokens: int
    reported_prompt_tokens: int | None
    # the prompt cache: predicted (snapcompact.billing.cache_uses) and as litellm read the
    # twin's usage (cache_creation_input_tokens; cache_read_input_tokens / cached_tokens)
    predicted_cache_write: int = 0
    predicted_cache_read: int = 0
    reported_cache_write: int | None = None
    reported_cache_read: int | None = None

    @property
    def drift(self) -> float | None:
        if self.reported_prompt_tokens is None or not self.predicted_prompt_tokens:
            return None
        return self.reported_prompt_tokens / self.predicted_prompt_tokens - 1


def drift_rows(config: str, records: Sequence[Any], exchanges: Sequence[Exchange]
               ) -> list[DriftRow]:
    """Pair each record with the twin exchange that answered it (same frames, same usage)."""
    twin = twin_for(config) or "-"
    accepted = [e for e in exchanges if e.accepted]
    unused = list(accepted)
    out = []
    for r in records:
        frames = tuple(tuple(px) for px in r.frame_px)

        def same(e: Exchange, frames: tuple = frames, r: Any = r) -> bool:
            return e.image_sizes == frames and e.prompt_tokens == r.reported_prompt_tokens

        # identical requests (an "auto" arm that resolves to a listed shape) share one answer
        match = next((e for e in unused if same(e)), None) or next(
            (e for e in accepted if same(e)), None)
        if match is not None and match in unused:
            unused.remove(match)
        twin_images = None
        if match is not None and (match.image_tokens or not frames):
            twin_images = match.image_tokens
        out.append(DriftRow(config, twin, r.reader, r.shape, frames,
                            tuple(r.image_tokens_per_frame), twin_images,
                            r.predicted_prompt_tokens, r.reported_prompt_tokens,
                            r.predicted_cache_write_tokens, r.predicted_cache_read_tokens,
                            r.reported_cache_write_tokens, r.reported_cache_read_tokens))
    return out


def format_drift_table(rows: Sequence[DriftRow]) -> str:
    """Per config: requests, predicted vs reported prompt tokens, image tokens both ways."""
    head = (f"{'model config':<30} {'twin':<16} {'req':>4} {'pred prompt':>11} "
            f"{'reported':>9} {'drift':>7} {'pred img':>9} {'twin img':>9} "
            f"{'cache write pred/rep':>21} {'cache read pred/rep':>21}  frames (px)")
    lines = [head, "-" * len(head)]
    by_config: dict[str, list[DriftRow]] = {}
    for row in rows:
        by_config.setdefault(row.config, []).append(row)
    for config, group in by_config.items():
        predicted = sum(r.predicted_prompt_tokens for r in group)
        reported = sum(r.reported_prompt_tokens or 0 for r in group)
        pred_img = sum(sum(r.predicted_image_tokens) for r in group)
        rule = [r for r in group if r.frame_px]
        twin_img = ("no rule" if any(r.twin_image_tokens is None for r in rule)
                    else str(sum(sum(r.twin_image_tokens or ()) for r in rule)))
        drift = f"{100 * (reported / predicted - 1):+.1f}%" if predicted else "-"
        sizes = sorted({px for r in rule for px in r.frame_px})
        write = (f"{sum(r.predicted_cache_write for r in group):,}/"
                 f"{sum(r.reported_cache_write or 0 for r in group):,}")
        read = (f"{sum(r.predicted_cache_read for r in group):,}/"
                f"{sum(r.reported_cache_read or 0 for r in group):,}")
        lines.append(f"{config:<30} {group[0].twin:<16} {len(group):>4} {predicted:>11,} "
                     f"{reported:>9,} {drift:>7} {pred_img:>9,} {twin_img:>9} "
                     f"{write:>21} {read:>21}  "
                     + " ".join(f"{w}x{h}" for w, h in sizes))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help="model configs (default: every real one)")
    parser.add_argument("--experiment", default="smoke")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Hydra override (repeatable), e.g. --set frame_size=null")
    args = parser.parse_args(argv)
    configs = args.configs or [c for c in real_provider_configs() if twin_for(c)]
    rows: list[DriftRow] = []
    with tempfile.TemporaryDirectory() as scratch, all_twins() as server:
        for config in configs:
            server.reset()
            run_against_twin(config, server, Path(scratch), experiment=args.experiment,
                             overrides=["model.rate_limit_rps=null", *args.set])
            records = list(iter_records(Path(scratch) / "runs" / config / "records.jsonl"))
            rows += drift_rows(config, records, server[twin_for(config)].log)
    print(format_drift_table(rows))
    skipped = [c for c in real_provider_configs() if twin_for(c) is None]
    for config in skipped:
        print(f"skipped {config}: {UNREACHABLE.get(_route(config))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
