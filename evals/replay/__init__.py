"""Room: one session replayed through production's maintenance -> the context it would send next,
its bill over the following turns, and the maintenance passes behind it.

Modules: ``contexts`` (an arm's context: the agent replay, the request, its bill and verdict, in
steps), ``compaction_bill`` (records the summary calls a replay makes; the library bills them),
``passes`` (the maintenance passes as rows), ``perfect_summary`` (the oracle summarizer, never
ranked). Every bill is the library's (:mod:`snapcompact.billing`).
"""
