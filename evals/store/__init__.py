"""Room: what a run writes: the records (the contract with analysis), the transcript store and
the pixel identity of a frame for the response cache.
"""
