"""Room: requests to the models: the client (cache, limits, retries), the response cache, the
dollar budget, litellm's price map, the token-rate limiter, preflight and the prompt cache.

Modules: ``client`` (request, response, the client that sends them), ``completion`` (litellm's
import and what its answers say), ``retry`` (when to try again, how long to wait),
``progress`` (the counters and their bar), ``request_rate`` (requests per second per
provider), ``token_rate`` (input tokens per minute per model), ``response_cache``,
``dollar_budget``, ``price_map``, ``preflight``, ``prompt_cache``.
"""
