"""Room: requests to the models: the client (cache, limits, retries), the response cache, the
dollar budget, litellm's price map, the token-rate limiter, preflight and the prompt cache.
"""
