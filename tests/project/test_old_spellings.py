"""One word per thing (issue 38): the project says *shape*; the reference's word for it survives
only as data, in one table (``snapcompact/core/old_spellings.toml``) read by one converter.

Expected values come from outside the converter: the reference's own archive JSON (its frames'
ink key), the committed run ids (results/records.csv, checked in tests/harness/spec), and the
words on disk in the source tree.
"""

from __future__ import annotations

import gzip
import json
import re
from importlib import resources

import pytest
from locations import GOLDEN, REPO

from evals.spec.arms import ShapeSpec
from snapcompact.core import on_disk_key, rename_old_keys, renamed_keys

OLD_WORD = re.compile(r"\w*vari" r"ants?\w*", re.IGNORECASE)


def test_no_python_name_or_text_of_the_library_or_harness_spells_the_old_word() -> None:
    hits = [f"{p.relative_to(REPO)}:{n}" for pkg in ("snapcompact", "evals")
            for p in sorted((REPO / pkg).rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if OLD_WORD.search(line)]
    assert hits == []


def test_the_old_word_lives_in_one_table() -> None:
    table = resources.files("snapcompact.core").joinpath("old_spellings.toml").read_text()
    assert OLD_WORD.search(table)
    data_files = [p for p in (REPO / "snapcompact").rglob("*.toml")
                  if p.name != "old_spellings.toml" and OLD_WORD.search(p.read_text())]
    assert data_files == []


def test_archive_frames_keep_the_references_ink_key() -> None:
    """The reference writes a frame's ink under its own word; the converter names that key."""
    data = json.loads(gzip.decompress((GOLDEN / "archive" / "reference.json.gz").read_bytes()))
    frames = [f for s in data["outputs"]["scenarios"] for r in s["rounds"]
              for f in (r["result"].get("preserveData") or {}).get("snapcompact", {})
              .get("frames", [])]
    assert frames
    key = on_disk_key("archive_ink")
    assert all(frame[key] in ("bw", "sent") for frame in frames)


def test_run_ids_hash_the_shape_under_the_converters_key() -> None:
    assert ShapeSpec("8on16-bw", 512).id_json() == {on_disk_key("run_id_shape"): "8on16-bw",
                                                    "frame_size": 512}


def test_old_keys_are_renamed_and_a_clash_is_refused() -> None:
    old, new = next(iter(renamed_keys("model_table").items()))
    data, found = rename_old_keys("model_table", {old: 1, "other": 2}, "t")
    assert data == {new: 1, "other": 2} and found == [old]
    with pytest.raises(ValueError, match=f"^t: both '{new}' and its old spelling '{old}'"):
        rename_old_keys("model_table", {old: 1, new: 1}, "t")
    assert rename_old_keys("model_table", {new: 1}, "t") == ({new: 1}, [])


def test_unknown_kinds_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="no old spellings for 'nope'; known: config_keys"):
        renamed_keys("nope")
    with pytest.raises(ValueError, match="no on-disk key 'nope'; known: archive_ink"):
        on_disk_key("nope")


def test_every_renamed_key_names_the_key_in_use_today() -> None:
    """Each new spelling is what the shipped data and the harness actually use."""
    shapes = resources.files("snapcompact.core").joinpath("shapes.toml").read_text()
    models = resources.files("snapcompact.pricing").joinpath("model_shapes.toml").read_text()
    assert all(f"[{new}." in shapes for new in renamed_keys("shape_table").values())
    assert all(re.search(rf"^\[?{new}\]? ?=?", models, re.M) or f"{{ {new} =" in models
               or f"\n{new} =" in models for new in renamed_keys("model_table").values())
    eval_keys = (REPO / "configs" / "shape" / "auto.yaml").read_text()
    assert all(f"{new.split('.', 1)[1]}:" in eval_keys
               for new in renamed_keys("config_keys").values())


def test_winners_are_not_written_into_a_table_in_the_old_spelling() -> None:
    """The old spelling is read (with a warning), never rewritten: proposing winners into a
    model table in it is refused, naming the keys to rename them to."""
    from evals.analysis.write_model_shapes import propose_table

    text = resources.files("snapcompact.pricing").joinpath("model_shapes.toml").read_text()
    old, new = next((o, n) for o, n in renamed_keys("model_table").items() if f"[{n}]" in text)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match=f"rename them .*{new}"):
        propose_table(text.replace(f"[{new}]", f"[{old}]"), [])
