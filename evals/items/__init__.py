"""Room: what a run asks about: dataset items and sessions, the dataset readers that make them,
and the prompt text every reader is sent.
"""
