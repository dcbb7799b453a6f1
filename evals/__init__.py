"""The eval harness: rooms that follow one run's flow (docs/architecture.md, the evals layers).

    items     sessions and dataset items, the prompts
    replay    a session replayed through production's maintenance -> the next context, its bill
    send      the request to a model: client, response cache, budget, prices, limits, preflight
    readers   the offline OCR reader and the provider reader's request/answer parsing
    blind     the blind offline reader: told only the question, BM25 over what it read
    store     records, transcripts, pixel keys
    pipeline  one run: the Hydra entry point, the plan, the loop, rows, scoring, the report
    analysis  records -> tables, intervals, plots, the winner per model line
    study     pre-registered studies: the plan, its power analysis, its order in git
    view      the static records viewer
    spec      the typed run spec, the configs' location, the versions behind a row
    twins     every fake: provider wire twins, the loopback chat server, the soak run
    support   redaction, the console voice, the run-folder lock

Outside the rooms: ``transcripts`` and ``pixel_keys``, the old paths the offline reader still
imports (re-exporting :mod:`evals.store`'s names, so the reader's hashed source stays the same).
"""
