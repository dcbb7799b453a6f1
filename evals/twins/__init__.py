"""Wire twins: loopback stand-ins for the real provider APIs, reached by litellm via ``api_base``.

Why twins and not one fake: litellm turns our OpenAI-format requests into each provider's own
wire format (Anthropic Messages, OpenAI chat completions and Responses, Gemini
``generateContent``, Bedrock Converse) and reads back each provider's own usage fields. A twin
speaks one of those formats as the provider documents it: it validates image blocks and request
limits, refuses with the provider's error shape and status, answers with the provider's response
and usage shape, and can inject that provider's rate-limit and overload replies with its headers.

Image tokens in a twin's usage are computed from the decoded image by the provider's documented
rule as read *independently* of ``snapcompact.pricing.billing`` (``evals.twins.vision``): the drift
column of a run against a twin then compares two readings of the docs, and a disagreement is a
finding, not noise. Text tokens are counted with tiktoken's o200k_base when it loads offline
(else characters / 4): the twins cannot know a provider's private tokenizer.

``TwinServer`` hosts any set of twins on one loopback port, each under its own path prefix
(``/anthropic``, ``/openai``, ``/gemini``...), in a background thread; see ``evals.twins.server``.

Room: every fake of the harness lives here, apart from production code: the wire twins
(``anthropic``: Messages; ``bedrock``: Converse for Claude; ``openai``; ``gemini``; ``vertex``),
what they share (``server``: the host and the twin base; ``vision``: the image rules read from
the docs; ``prompt_cache``: the providers' prompt caches), the scriptable OpenAI-compatible
server (``fake_server``), the loopback server they share (``loopback``), the soak run against
a flaky provider (``soak``) and the twin smoke run (``smoke``).
"""

from evals.twins.server import Fault, TwinServer, WireTwin

__all__ = ["Fault", "TwinServer", "WireTwin"]
