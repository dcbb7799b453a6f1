"""Regenerate the reference resolution fixtures from the upstream implementation.

Why a script: the tests must never call the reference at run time, yet the fixture has to be
reproducible. This asks ``upstream-frames eval`` (npm @oh-my-pi/snapcompact 18.2.11) once for
every (model id, wire API) pair below, every forced variant per API, the ideal variant of each
model id and the image/frame budgets, then writes ``reference.json`` next to this file.

    .venv/bin/python tests/golden/resolve/make_golden.py [path/to/upstream-frames]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ORACLE = str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames")

MODEL_IDS = [
    # Claude: high-res tier (Opus >= 4.7, Fable, Mythos) and the older lines.
    "claude-opus-4-8", "anthropic--claude-4.8-opus", "claude-opus-4-10", "anthropic/claude-fable-latest",
    "~anthropic/claude-fable-latest", "claude-opus-5", "claude-opus-6", "CLAUDE-OPUS-5", "claude-opus-5-11",
    "claude-opus-4-7", "claude-opus-4.7", "claude-opus-4-7-20260416", "claude-opus-4-6", "claude-opus-4-5",
    "claude-opus-4-1", "claude-opus-4", "claude-3-opus-20240229", "claude-3-5-sonnet", "claude-sonnet-4-5",
    "claude-sonnet-4-5-20250929", "claude-sonnet-5", "claude-haiku-4-5", "claude-fable-5",
    "claude-fable-5@20250929", "claude-mythos-preview", "anthropic.claude-opus-4-8",
    "us.anthropic.claude-opus-4-7", "anthropic/claude-sonnet-4.5",
    # Gemini, GPT / Codex, Kimi, GLM.
    "gemini-3.5-flash", "gemini-2.5-flash", "gemini-3-pro-preview", "google/gemini-2.5-pro",
    "gpt-5.5", "gpt-5", "gpt-4.1", "gpt-4o", "gpt-5.4-mini", "openai/gpt-5-codex", "codex-mini-latest",
    "moonshotai/kimi-k2.6", "kimi-k2.5", "kimi-k3", "z-ai/glm-4.6v", "glm-4.5v",
    # Unmeasured: fall back to the wire API family.
    "o3", "o4-mini", "qwen/qwen3-vl", "llama-4-maverick", "mistral-large", "grok-4", "deepseek-chat",
]
APIS = [
    "anthropic-messages", "bedrock-converse-stream", "openai-completions", "openai-responses",
    "openai-codex-responses", "azure-openai-responses", "google-generative-ai", "google-gemini-cli",
    "google-vertex", "mystery-api", None,
]
TEXTS = [
    "你好世界，这是一个测试。我们需要足够多的中文字符来触发。",
    "def add(a, b):\n    return a + b  # plain ASCII code",
    "\U00031350" * 12,
    "café résumé naïve — Latin-1 prose",
    "こんにちは世界 안녕하세요 세계 かなカナ漢字",
    "mostly English text with a little 中文 inside it, far below the CJK-heavy ratio",
]
TEXT_TARGETS = [["gpt-5.5", "openai-responses"], ["claude-opus-4-8", "anthropic-messages"],
                ["gemini-3.5-flash", "google-vertex"]]
PROVIDERS = [
    "anthropic", "amazon-bedrock", "openai", "openai-codex", "google", "google-vertex",
    "google-gemini-cli", "openrouter", "umans", "groq", "moonshot", "zai", "unknown-provider",
]

JS = """
(() => {
  const cases = %(cases)s;
  const out = { version: "@oh-my-pi/snapcompact 18.2.11", auto: [], forced: [], ideal: {}, budgets: {} };
  for (const [id, api] of cases.pairs) {
    const target = api === null ? { id } : { api, id };
    out.auto.push({ model: id, api, shape: sc.resolveShape(target, "auto") });
  }
  for (const name of sc.SHAPE_VARIANT_NAMES) {
    for (const api of cases.apis) {
      const target = api === null ? { id: "claude-fable-5" } : { api, id: "claude-fable-5" };
      out.forced.push({ variant: name, api, shape: sc.resolveShape(target, name) });
    }
  }
  for (const id of cases.models) out.ideal[id] = sc.idealShapeVariant(id) ?? null;
  for (const p of cases.providers) {
    out.budgets[p] = { image: sc.providerImageBudget(p), frame: sc.providerFrameBudget(p) };
  }
  out.texts = [];
  for (const text of cases.texts) {
    const scan = { "8x13": sc.scanRenderability(text, sc.SHAPE_VARIANTS["8on22-bw"]), silver: sc.scanRenderability(text, sc.SHAPE_VARIANTS["silver16-bw"]) };
    for (const [id, api] of cases.textTargets) {
      out.texts.push({ text, model: id, api, scan, shape: sc.resolveShapeForText(text, { api, id }, "auto"),
                       forced: sc.resolveShapeForText(text, { api, id }, "8on16-bw") });
    }
  }
  out.constants = {
    MAX_FRAMES_DEFAULT: sc.MAX_FRAMES_DEFAULT, FRAME_TOKEN_ESTIMATE: sc.FRAME_TOKEN_ESTIMATE,
    FRAME_DATA_BYTES_ESTIMATE: sc.FRAME_DATA_BYTES_ESTIMATE, FRAME_DATA_BYTES_BUDGET: sc.FRAME_DATA_BYTES_BUDGET,
    DEFAULT_PROVIDER_IMAGE_BUDGET: sc.DEFAULT_PROVIDER_IMAGE_BUDGET,
    maxFramesForDataBudget: sc.maxFramesForDataBudget(),
    PROVIDER_IMAGE_BUDGETS: sc.PROVIDER_IMAGE_BUDGETS,
  };
  return out;
})()
"""


def main(argv: list[str]) -> int:
    oracle = argv[1] if len(argv) > 1 else DEFAULT_ORACLE
    cases = {
        "pairs": [[m, a] for m in MODEL_IDS for a in APIS],
        "apis": APIS,
        "models": MODEL_IDS,
        "providers": PROVIDERS,
        "texts": TEXTS,
        "textTargets": TEXT_TARGETS,
    }
    expr = JS % {"cases": json.dumps(cases)}
    raw = subprocess.run([oracle, "eval", expr], check=True, capture_output=True, text=True).stdout
    data = json.loads(raw)
    target = HERE / "reference.json"
    target.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {target} ({target.stat().st_size} bytes): {len(data['auto'])} auto, "
          f"{len(data['forced'])} forced, {len(data['budgets'])} budgets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
