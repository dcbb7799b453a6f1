"""Room: what a run asks about: dataset items and sessions, the dataset readers that make them,
and the prompt text every reader is sent.

Rooms: ``qa_items`` (what every dataset hands the harness), ``sessions`` (a conversation plus
the questions asked after it), ``prompts`` (the versioned words every reader is sent),
``probes`` (probe kinds: exact, gist, never-stated), ``datasets`` (the registry of dataset readers).
"""
