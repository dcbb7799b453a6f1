"""Room: one run end to end: the Hydra entry point, the plan (every session replayed per arm,
every question priced), the run loop, one record row per question, scoring, the console report;
and the token screen over session lengths (dry-run plans per research arm).

Top room of the flow; imports the rooms below it (docs/architecture.md, the evals layers block).
"""
