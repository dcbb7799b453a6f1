"""Every shipped config composes, validates, and means what its file says.

Composition goes through Hydra's compose API over the real ``configs/`` folder (the one the
installed ``snapcompact-eval`` reads). Every option of every group is composed under every
experiment, and each result must become a valid ``RunSpec``. Model configs are checked against
the library's own tables and litellm's bundled price map, independently of the runner.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from locations import REPO

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from omegaconf import OmegaConf

from evals.items.datasets import dataset_params
from evals.pipeline.run import CONFIG_DIR
from evals.spec.run_spec import STRATEGIES, RunSpec
from snapcompact.core import SHAPE_NAMES

#: ``RunSpec.run_id()`` of ``experiment=smoke shape=8on16-bw``, computed on main at ca4f8b4
#: (before ``shape.variant`` became ``shape.name``).
RUN_ID_BEFORE_RENAME = "ae59ec916c83707b"

GROUPS = ("model", "shape", "strategy", "summarizer", "dataset", "reader", "experiment",
          "launcher")


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def test_config_dir_is_the_repository_configs_folder():
    # reached through evals/configs, the symlink the wheel build follows (evals.spec.config_files)
    assert CONFIG_DIR.resolve() == (REPO / "configs").resolve()
    assert (CONFIG_DIR / "eval.yaml").is_file()
    for group in (*GROUPS, "hydra"):
        assert options(group), f"configs/{group}/ is empty"


def test_strategy_group_has_every_replay_strategy(compose_eval):
    from snapcompact.compaction import REPLAY_STRATEGIES

    assert set(options("strategy")) == set(STRATEGIES) == set(REPLAY_STRATEGIES)
    for name in STRATEGIES:
        spec = RunSpec.from_config(compose_eval([f"strategy={name}", "summarizer=mock"]))
        assert spec.strategies == (name,)
        arms = spec.arms()
        if name == "snapcompact":  # foveated x shapes, pinned at auto only (policy_shapes)
            assert [(a.policy, a.shape.name) for a in arms] == [
                ("foveated", "auto"), ("foveated", "8on22-bw"), ("pinned", "auto")]
        else:
            assert [(a.strategy, a.policy, a.shape.name) for a in arms] == [(name, "", "text")]


def test_shape_group_has_every_named_shape_plus_auto():
    assert set(options("shape")) == set(SHAPE_NAMES) | {"auto"}
    for name in SHAPE_NAMES:
        data = yaml.safe_load((CONFIG_DIR / "shape" / f"{name}.yaml").read_text())
        assert data == {"name": name, "frame_size": None}


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_group_option_composes_under_every_experiment(experiment, compose_eval):
    """Each (experiment, group option) pair composes into a valid RunSpec."""
    checked = 0
    for group in ("model", "shape", "strategy", "summarizer", "dataset", "reader",
                  "launcher"):
        for option in options(group):
            extra = ["summarizer=mock"] if group == "strategy" else []
            if group == "dataset" and option == "session":
                extra = ["dataset.params.path=s.json", "dataset.params.questions=q.jsonl"]
            cfg = compose_eval([f"experiment={experiment}", f"{group}={option}", *extra])
            if group == "dataset" and set(cfg.dataset.params) - set(
                    dataset_params(cfg.dataset.name)):
                # the experiment sizes its own dataset: another one is refused, by name
                with pytest.raises(ValueError, match="got unknown params"):
                    RunSpec.from_config(cfg)
                checked += 1
                continue
            spec = RunSpec.from_config(cfg)
            assert spec.experiment == experiment
            if group == "model":
                assert spec.model.name == option
            elif group == "shape":
                assert len(spec.shapes) == 1 and spec.shapes[0].name == option
            elif group == "strategy":
                assert spec.strategies == (option,)
            elif group == "summarizer":
                assert spec.summarizer is not None and not spec.summarizer.offline_reader
            elif group == "reader":
                assert spec.reader.readers == ("qa",)
            checked += 1
    assert checked == sum(len(options(g)) for g in ("model", "shape", "strategy", "summarizer",
                                                    "dataset", "reader", "launcher"))


def test_no_arguments_is_the_default_offline_experiment(compose_eval):
    spec = RunSpec.from_config(compose_eval([]))
    assert spec.experiment == "default"
    assert spec.model.offline_reader and spec.model.litellm_id.startswith("snapocr/")
    assert spec.dataset.name == "agent_session"
    # production's regime (issue 23): two ~300k-token sessions, 25 facts each, at the model's
    # real 200k window with production's default settings
    assert spec.dataset.params["target_tokens"] == 300000
    assert spec.dataset.params["n_items"] == 2
    assert len(spec.dataset.params["depths"]) == 40  # issue 23: >= 40 facts per session
    assert spec.dataset.params["talk_share"] == 0.5
    # issue 47: every depth asks the three probe kinds (the dataset's own default: none)
    assert list(spec.dataset.params["probes"]) == ["exact", "gist", "never-stated"]
    assert spec.context_window == 200000
    assert spec.settings_overrides == {}
    assert spec.strategies == ("full", "truncate", "snapcompact")
    assert spec.policies == ("foveated", "pinned")
    assert [s.name for s in spec.shapes] == ["auto", "8on22-bw"]
    assert all(s.frame_size is None for s in spec.shapes)  # the size production picks
    assert spec.model.target_model == "claude-sonnet-4-5"
    assert [a.label for a in spec.arms()] == [
        "full", "truncate", "snapcompact/foveated/auto", "snapcompact/foveated/8on22-bw",
        "snapcompact/pinned/auto"]
    assert spec.model.required_env == ()
    # the agent's LLM fallbacks run offline with the stand-in summarizer, never a real model
    assert spec.summarizer is not None and spec.summarizer.stand_in
    assert "mock_response" in spec.summarizer.params and spec.summarizer.required_env == ()


def test_small_window_experiment_is_the_32k_arm(compose_eval):
    spec = RunSpec.from_config(compose_eval(["experiment=small_window"]))
    assert spec.context_window == 32000
    assert [a.label for a in spec.arms()] == ["snapcompact/foveated/auto"]
    assert spec.dataset.params == RunSpec.from_config(compose_eval([])).dataset.params


def test_make_results_blind_pass_asks_the_same_sessions_blind(compose_eval):
    """The Makefile's blind pass (reader=blind experiment_name=default_blind): the default
    experiment's sessions and arms, answered by the blind reader into a folder of its own."""
    told = RunSpec.from_config(compose_eval([]))
    blind = RunSpec.from_config(compose_eval(["reader=blind", "experiment_name=default_blind"]))
    assert blind.experiment == "default_blind" and blind.reader.locate == "blind"
    assert blind.model.reader_ids["qa"] == "snapblind/context-qa"
    assert blind.dataset == told.dataset and blind.arms() == told.arms()


def test_make_results_asks_the_32k_sessions_blind_too(compose_eval):
    """The Makefile's second blind pass (experiment=small_window reader=blind
    experiment_name=small_window_blind): the 32k arm's sessions, arms and window, answered by
    the blind reader into its own folder, which the outcome tables and the viewer read."""
    told = RunSpec.from_config(compose_eval(["experiment=small_window"]))
    blind = RunSpec.from_config(compose_eval(["experiment=small_window", "reader=blind",
                                              "experiment_name=small_window_blind"]))
    assert blind.experiment == "small_window_blind" and blind.reader.locate == "blind"
    assert blind.context_window == 32000 == told.context_window
    assert blind.dataset == told.dataset and blind.arms() == told.arms()
    recipe = (REPO / "Makefile").read_text().split("\nresults:\n", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in recipe.splitlines()]
    assert ("$(PY) -m evals.pipeline.run experiment=small_window reader=blind "
            "experiment_name=small_window_blind") in lines
    for command in ("evals.analysis.outcomes", "evals.view"):
        line = next(x for x in lines if f"-m {command} " in x)
        assert all(f"results/runs/{run} " in line for run in
                   ("default", "default_blind", "small_window", "small_window_blind"))


def test_policy_shapes_are_checked(compose_eval):
    with pytest.raises(ValueError, match="policy_shapes has unknown policy"):
        RunSpec.from_config(compose_eval(["+policy_shapes.sideways=[auto]"]))


def test_command_line_group_choice_beats_the_experiment(compose_eval):
    cfg = compose_eval(["experiment=smoke", "dataset=needles", "model=mock"])
    assert cfg.dataset.name == "needles" and cfg.model.name == "mock"
    assert cfg.experiment_name == "smoke"
    # a chosen shape replaces the experiment's list of arms
    spec = RunSpec.from_config(compose_eval(["shape=8on16-bw", "shape.frame_size=1024"]))
    assert [(s.name, s.frame_size) for s in spec.shapes] == [("8on16-bw", 1024)]


def test_launcher_group_maps_onto_hydra_launcher(compose_eval):
    basic = compose_eval([], hydra_config=True)
    joblib = compose_eval(["launcher=joblib"], hydra_config=True)
    assert basic.hydra.launcher._target_.endswith("BasicLauncher")
    assert joblib.hydra.launcher._target_.endswith("JoblibLauncher")
    assert joblib.hydra.launcher.n_jobs == 2
    local = compose_eval(["launcher=submitit_local"], hydra_config=True)
    slurm = compose_eval(["launcher=submitit_slurm"], hydra_config=True)
    assert local.hydra.launcher._target_.endswith("LocalLauncher")
    assert slurm.hydra.launcher._target_.endswith("SlurmLauncher")


def test_run_directories_are_deterministic_and_ignore_non_measuring_keys(compose_eval):
    cfg = compose_eval(["dataset=needles", "dry_run=true", "budget_usd=1"], hydra_config=True)
    hc = cfg.hydra
    assert "${now:" not in OmegaConf.to_yaml(hc.run) and "${now:" not in OmegaConf.to_yaml(hc.sweep)
    # one folder per experiment: rows carry their own coordinates, reruns resume there
    assert OmegaConf.to_yaml(hc.run).strip().endswith(
        "/runs/${sc_folder_name:${experiment_name}}")
    excluded = set(hc.job.config.override_dirname.exclude_keys)
    assert {"dry_run", "budget_usd", "progress", "cache_dir", "launcher"} <= excluded
    assert hc.job.chdir is False


@pytest.mark.parametrize("name", options("model"))
def test_model_config_is_priced_resolved_and_billed(name, compose_eval):
    """Each model's target resolves to a shape, bills a real frame, and has a price offline."""
    from evals.send.price_map import price_of
    from snapcompact.billing import bill_image
    from snapcompact.pricing import resolve_shape

    spec = RunSpec.from_config(compose_eval([f"model={name}"]))
    model = spec.model
    resolved = resolve_shape(model.target_model, api=model.api, provider=model.provider)
    detail = model.image_detail if model.image_detail is not None else resolved.image_detail
    bill = bill_image(model.target_model, resolved.frame_size, 400, detail, api=model.api,
                      provider=model.provider)
    assert bill.tokens > 0 and 0 < bill.seen_width <= resolved.frame_size
    price = price_of(model.price_model)
    assert price.input_per_token > 0
    for env in model.required_env:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", env), env
    assert model.offline_reader == name.startswith("ocr")
    if not model.offline_reader and name not in ("mock",):
        assert model.required_env, f"{name}: a real provider must name its key variables"


def test_model_lines_cover_the_shape_table_and_routes():
    """Claude, GPT, Gemini, Kimi and GLM, direct and through OpenRouter, Vertex and Bedrock."""
    ids = {n: yaml.safe_load((CONFIG_DIR / "model" / f"{n}.yaml").read_text())["litellm_id"]
           for n in options("model")}
    joined = " ".join(ids.values())
    for needle in ("anthropic/claude-opus-4-7", "anthropic/claude-sonnet-4-5", "openai/gpt-5",
                   "openai/gpt-4.1", "gemini/gemini-2.5-flash", "gemini-3", "moonshot/kimi",
                   "zai/glm", "openrouter/anthropic/claude", "openrouter/z-ai/glm",
                   "vertex_ai/claude", "vertex_ai/gemini", "bedrock/"):
        assert needle in joined, needle


def test_configs_hold_no_secrets():
    secret = re.compile(r"(sk-[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}|AKIA[0-9A-Z]{16})")
    for path in CONFIG_DIR.rglob("*.yaml"):
        text = path.read_text()
        assert not secret.search(text), path
        assert not re.search(r"(?im)^\s*api_key\s*:", text), path


def test_credential_params_are_refused(compose_eval):
    with pytest.raises(ValueError, match="environment"):
        RunSpec.from_config(compose_eval(["model=claude-sonnet-4-5", "+model.params.api_key=abc"]))


@pytest.mark.parametrize("override, message", [
    ("shapes=[11on16-bw,nope]", "unknown shape 'nope'"),
    ("+dataset.params.bogus=1", "unknown params"),
    ("+model.colour=red", "unknown key"),
    ("frame_size=0", "frame size"),
    ("reader.readers=[qa,guess]", "unknown reader"),
    ("shapes=[]", "snapcompact needs at least one shape"),
    ("shapes=[text]", "the whole history as text is the strategy 'full'"),
    ("strategies=[full,shrink]", "unknown value"),
    ("policies=[pinned,lazy]", "unknown value"),
    ("experiment=smoke strategies=[context-full]", "choose a summarizer model"),
    ("summarizer=offline ~summarizer.params.mock_response", "a stand-in must not call"),
    ("+model.stand_in=true", "summarizer stand-in .* cannot answer questions"),
    ("context_window=10", "context_window must be an integer >= 1000"),
    ("++settings.compaction.keepRecentTokens=-5", "keepRecentTokens"),
    ("+settings.bogus.x=1", "unknown settings section"),
    ("experiment_name=../../x", "must be a plain folder name"),
])
def test_bad_configs_fail_before_anything_runs(override, message, compose_eval):
    with pytest.raises(ValueError, match=message):
        RunSpec.from_config(compose_eval(override.split()))


def test_old_shape_key_is_read_with_a_warning_naming_the_new_one(compose_eval):
    from evals.spec.old_spellings import rename_old_overrides

    with pytest.warns(FutureWarning, match="shape.variant is the old spelling; use shape.name"):
        args = rename_old_overrides(["shape.variant=8on16-bw", "+shape.variant=x", "model=mock",
                                     "--cfg", "job"])
    assert args == ["shape.name=8on16-bw", "+shape.name=x", "model=mock", "--cfg", "job"]
    # a config (or a + override) still carrying the old key
    cfg = compose_eval(["shape=5x8-bw", "+shape.variant=8on16-bw"])
    with pytest.warns(FutureWarning, match="use shape.name"):
        spec = RunSpec.from_config(cfg)
    assert [(s.name, s.frame_size) for s in spec.shapes] == [("8on16-bw", None)]
    assert not hasattr(spec.shapes[0], "variant")  # the attribute is retired (issue 38)


def test_run_id_is_unchanged_by_the_rename(compose_eval):
    # the id of this run before "variant" became "name" (main at ca4f8b4): rows resume
    spec = RunSpec.from_config(compose_eval(["experiment=smoke", "shape=8on16-bw"]))
    assert spec.run_id() == RUN_ID_BEFORE_RENAME


@pytest.mark.parametrize("overrides, experiment", [([], "default"),
                                                   (["experiment=small_window"], "small_window")])
def test_the_committed_results_keep_their_run_ids(compose_eval, overrides, experiment):
    """``make results`` runs these two configs; results/records.csv names each row's run id
    (and results/runs/<id> the folder it resumes from): the ids must survive every rename."""
    import csv

    with (REPO / "results" / "records.csv").open() as f:
        committed = {row["run_id"] for row in csv.DictReader(f) if row["experiment"] == experiment}
    assert len(committed) == 1
    assert RunSpec.from_config(compose_eval(overrides)).run_id() in committed


def test_settings_snapcompact_shape_is_refused_naming_shape(compose_eval):
    """Each snapcompact arm draws the shape it names, so settings.snapcompact.shape would be
    silently overridden: it is refused, and the error names the one key that sets the shape."""
    with pytest.raises(ValueError, match=r"^settings\.snapcompact\.shape .*shape=NAME"):
        RunSpec.from_config(compose_eval(["settings.snapcompact.shape=8on22-bw"]))
    with pytest.raises(ValueError, match=r"^settings\.snapcompact\.shape .*shape=NAME"):
        RunSpec.from_config(compose_eval(["++research.settings.snapcompact.shape=8on22-bw"]))
    assert RunSpec.from_config(compose_eval(["shape=8on22-bw"])).shapes[0].name == "8on22-bw"


def test_the_window_default_is_written_once(compose_eval):
    """configs/eval.yaml holds the working window's one default: the schema has none of its
    own, so a config without the key is refused naming it (no second default hides there)."""
    assert isinstance(yaml.safe_load((CONFIG_DIR / "eval.yaml").read_text())["context_window"],
                      int)
    data = OmegaConf.to_container(compose_eval([]), resolve=True)
    del data["context_window"]
    with pytest.raises(ValueError, match="^context_window must be an integer >= 1000, got None$"):
        RunSpec.from_config(data)


def test_cli_finds_its_configs_from_any_directory(tmp_path):
    """The installed console script composes from another cwd (--cfg prints, runs nothing)."""
    script = Path(sys.executable).with_name("snapcompact-eval")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "evals.pipeline.run"]
    out = subprocess.run([*command, "--cfg", "job", "model=gpt-5", "shape=6x6u-bw"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    cfg = yaml.safe_load(out.stdout)
    assert cfg["model"]["litellm_id"] == "openai/gpt-5"
    assert cfg["shape"]["name"] == "6x6u-bw"
    assert not (tmp_path / "results").exists()  # printing the config writes nothing


def test_generated_shape_configs_match_the_shape_table():
    """configs/shape/*.yaml and the all_shapes list are generated from shapes.toml (not hand-kept)."""
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "generate_configs.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr


def test_the_generator_check_names_a_stale_shape_config(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate_configs", REPO / "scripts" / "generate_configs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    shapes = tmp_path / "shape"
    shapes.mkdir()
    for path, text in gen.expected_files().items():
        if path.parent == gen.SHAPES_DIR:
            (shapes / path.name).write_text(text)
    (shapes / "5x8-bw.yaml").write_text("variant: 5x8-bw\nframe_size: 512\n")
    (shapes / "retired-shape.yaml").write_text("variant: retired-shape\n")
    monkeypatch.setattr(gen, "SHAPES_DIR", shapes)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    all_shapes = tmp_path / "all_shapes.yaml"
    all_shapes.write_text(gen.ALL_SHAPES.read_text().replace("6x6u-sent, ", ""))
    monkeypatch.setattr(gen, "ALL_SHAPES", all_shapes)
    assert gen.stale_files() == ["all_shapes.yaml", "shape/5x8-bw.yaml",
                                 "shape/retired-shape.yaml (no such shape)"]


def test_shape_name_is_the_one_shape_under_every_policy(compose_eval):
    # configs/eval.yaml: "`shape=NAME` runs that one shape only, under every policy"; the
    # default experiment pins the pinned policy to auto through policy_shapes, which a chosen
    # shape replaces rather than being silently overridden by it.
    spec = RunSpec.from_config(compose_eval(["shape=6x6u-bw"]))
    drawn = {(a.policy, a.shape.name) for a in spec.arms() if a.strategy == "snapcompact"}
    assert drawn == {("foveated", "6x6u-bw"), ("pinned", "6x6u-bw")}


def test_a_shape_chosen_over_the_research_shape_says_so(compose_eval):
    with pytest.warns(UserWarning, match=r"shape=6x6u-bw replaces research.shape \(8on22-bw\)"):
        spec = RunSpec.from_config(compose_eval(["shape=6x6u-bw", "research.shape=8on22-bw"]))
    assert {a.shape.name for a in spec.arms() if a.strategy == "snapcompact"} == {"6x6u-bw"}


def test_every_shape_key_override_the_sweep_doc_names_composes(compose_eval):
    """docs/running-real-models.md §6 documented ``shape.name=8on22-bw``, which Hydra refuses
    (no shape is selected by default): every ``shape.name`` / ``shape.variant`` override it
    shows must compose and give that one shape."""
    from evals.spec.old_spellings import rename_old_overrides

    doc = (REPO / "docs" / "running-real-models.md").read_text()
    shown = re.findall(r"`(\+?shape\.(?:name|variant)=)[^`]*`", doc)
    assert shown and all(s.startswith("+") for s in shown), shown
    for key in sorted(set(shown)):
        with pytest.warns(FutureWarning) if "variant" in key else _no_warning():
            args = rename_old_overrides([f"{key}8on22-bw"])
        spec = RunSpec.from_config(compose_eval(args))
        assert {a.shape.name for a in spec.arms() if a.is_snapcompact} == {"8on22-bw"}


def _no_warning():
    import contextlib

    return contextlib.nullcontext()
