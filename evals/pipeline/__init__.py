"""Room: one run end to end: the Hydra entry point, the plan (every session replayed per arm,
every question priced), the run loop, one record row per question, scoring, the console report;
and the token screen over session lengths (dry-run plans per research arm).

Modules: ``run`` (``snapcompact-eval``, the Hydra entry point), ``plan`` (contexts built and
questions planned), ``run_loop`` (plan, budget, send, record), ``finished`` (a finished run
answers "nothing to do"), ``rows`` (one record per question, in steps), ``scoring`` (exact match
and F1), ``probe_grading`` (the three outcomes by probe kind), ``reader_side`` (what the offline
readers are told, the row's reader label), ``run_report`` (the console report),
``token_phase`` (the token screen).

Top room of the flow; imports the rooms below it (docs/architecture.md, the evals layers block).
"""
