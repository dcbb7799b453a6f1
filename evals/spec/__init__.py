"""Room: what a run is and what produced it: the typed run spec from the Hydra config, where the
configs live, and the versions recorded in every row (provenance).
"""
