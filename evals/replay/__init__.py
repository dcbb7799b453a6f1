"""Room: one session replayed through production's maintenance -> the context it would send next,
its bill over the following turns, and the maintenance passes behind it.
"""
