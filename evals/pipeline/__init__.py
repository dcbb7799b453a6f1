"""Room: one run end to end: the Hydra entry point, the plan (every session replayed per arm,
every question priced), the run loop, one record row per question, scoring, the console report.

Top room of the flow; imports the rooms below it (docs/architecture.md, the evals layers block).
"""
