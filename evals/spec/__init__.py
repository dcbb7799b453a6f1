"""Room: what a run is and what produced it: the typed run spec from the Hydra config, where the
configs live, and the versions recorded in every row (provenance).

Modules: ``run_spec`` (the run, assembled and checked across keys), ``schema`` (what each config
group may hold), ``schema_errors`` (a refusal as one line naming the key), ``inputs`` (model,
dataset, readers), ``arms`` (shape, arm, research knobs), ``old_spellings`` (config keys in an
old spelling, through the library's one converter), ``config_files``, ``provenance``,
``dependency_versions``.
"""
