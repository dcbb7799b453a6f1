"""``--check`` re-derives what is quoted: the generated files from committed records, and every
figure in the scanned prose from a generated block, a quoted file or its command
(evals.analysis.rederive, evals.analysis.docs_blocks, research_compare --check).

Each test edits a copy of the committed checkout the way a hand (or a stale note) would, and
expects the check to name the file, the line and both values, read off the files by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from locations import REPO

from evals.analysis.diff_lines import compare_text
from evals.analysis.rederive import report_options
from evals.analysis.table import main


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """README, docs, configs, results and the library's tables, as committed."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copy(REPO / "README.md", root / "README.md")
    for folder in ("docs", "configs", "results"):
        shutil.copytree(REPO / folder, root / folder,
                        ignore=shutil.ignore_patterns("runs", "cache", "view"))
    (root / "snapcompact" / "pricing").mkdir(parents=True)
    for name in ("pricing.toml", "model_shapes.toml"):
        shutil.copy(REPO / "snapcompact" / "pricing" / name,
                    root / "snapcompact" / "pricing" / name)
    return root


@pytest.fixture()
def checkout(pristine: Path, tmp_path: Path) -> Path:
    root = tmp_path / "c"
    shutil.copytree(pristine, root)
    return root


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def _check(root: Path, capsys) -> tuple[int, str]:
    rc = main(["--check", "--root", str(root)])
    return rc, capsys.readouterr().err


def test_the_committed_checkout_passes(pristine, capsys):
    rc, err = _check(pristine, capsys)
    assert (rc, err) == (0, "")


def test_a_research_figure_changed_in_both_files_is_caught(checkout, capsys):
    # the README block quotes research_compare.md, so editing both keeps them agreeing; only
    # re-deriving research_compare.md from research_sessions.csv tells the truth
    old, new = "+0.093 [+0.051, +0.133]", "+0.193 [+0.151, +0.233]"
    compare = checkout / "results" / "research" / "research_compare.md"
    for path in (checkout / "README.md", compare):
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
    line = _line_of(compare, new)
    rc, err = _check(checkout, capsys)
    assert rc == 1
    assert (f"results/research/research_compare.md:{line}: committed '+0.193' != "
            "re-derived '+0.093'") in err


def test_a_hand_edit_of_the_report_is_caught(checkout, capsys):
    # the truncate bound's recall cell, whatever the committed run measured, edited by hand to
    # 0.999: the check names the line and both values
    report = checkout / "results" / "report.md"
    row = next(line for line in report.read_text().splitlines()
               if line.startswith("| truncate @200k | "))
    recall = row.split(" | ")[2].split(" ")[0]
    assert recall != "0.999"
    edited = row.replace(f" | {recall} [", " | 0.999 [", 1)
    report.write_text(report.read_text().replace(row, edited))
    line = _line_of(report, edited)
    rc, err = _check(checkout, capsys)
    assert rc == 1
    assert f"results/report.md:{line}: committed '0.999' != re-derived '{recall}'" in err


def test_a_hand_edit_of_a_committed_table_is_caught(checkout, capsys):
    summary = checkout / "results" / "shapetable" / "decisions.csv"
    text = summary.read_text()
    summary.write_text(text.replace("claude", "claudia", 1))
    rc, err = _check(checkout, capsys)
    # a CSV difference is named by its field and the re-derived header's column name
    assert rc == 1 and ("results/shapetable/decisions.csv:2: field 1 line: committed 'claudia' "
                        "!= re-derived 'claude'") in err


def test_a_stale_number_in_the_research_knobs_page_is_caught_then_fixed(checkout, capsys):
    page = checkout / "docs" / "research-knobs.md"
    text = page.read_text()
    stale = "So `recommended` bills 12 % fewer billed tokens than production.\n"
    at = text.index("### Held-out comparison")
    page.write_text(text[:at] + stale + "\n" + text[at:])
    line = _line_of(page, "12 % fewer")
    rc, err = _check(checkout, capsys)
    assert rc == 1
    assert f"docs/research-knobs.md:{line}: figure '12 % fewer' typed outside" in err
    page.write_text(text)
    assert _check(checkout, capsys) == (0, "")


def test_a_quoted_figure_must_be_in_the_file_it_names(checkout, capsys):
    page = checkout / "docs" / "research-knobs.md"
    text = page.read_text()
    assert "+7,041 [-5,106, +18,682]" in text
    page.write_text(text.replace("+7,041 [-5,106, +18,682]", "-7,041 [-5,106, +18,682]"))
    line = _line_of(page, "-7,041")
    rc, err = _check(checkout, capsys)
    assert rc == 1
    assert (f"docs/research-knobs.md:{line}: figure '-7,041' quoted from "
            "results/research/research_compare.md is not in it") in err


def test_a_figure_in_a_config_comment_is_caught(checkout, capsys):
    config = checkout / "configs" / "research" / "recommended.yaml"
    config.write_text("# recall 0.241 on the facts production discarded\n" + config.read_text())
    rc, err = _check(checkout, capsys)
    assert rc == 1 and "configs/research/recommended.yaml:1: figure '0.241'" in err


def test_a_timing_needs_its_command(checkout, capsys):
    readme = checkout / "README.md"
    text = readme.read_text()
    at = text.index("## What is here")
    readme.write_text(text[:at] + "<!-- example -->\nIt took 7 min 28 s.\n<!-- /example -->\n\n"
                      + text[at:])
    rc, err = _check(checkout, capsys)
    assert rc == 1 and "an example span without its command" in err
    readme.write_text(text[:at] + "<!-- example -->\n`make run` took 7 min 28 s.\n"
                      "<!-- /example -->\n\n" + text[at:])
    assert _check(checkout, capsys) == (0, "")
    readme.write_text(text[:at] + "`make run` took 7 min 28 s.\n\n" + text[at:])
    rc, err = _check(checkout, capsys)
    assert rc == 1 and "figure '7 min 28 s' typed outside" in err


def test_the_research_comparison_reruns_the_command_it_names(checkout):
    from evals.analysis import research_compare

    folder = checkout / "results" / "research"
    assert research_compare.main(["--check", "--out", str(folder)]) == 0
    md = folder / "research_compare.md"
    first, rest = md.read_text().split("\n", 1)
    assert "--bootstrap 4000 --seed 0" in first
    # the same file under another bootstrap count: its intervals no longer reproduce
    md.write_text(first.replace("--bootstrap 4000", "--bootstrap 2000") + "\n" + rest)
    assert research_compare.main(["--check", "--out", str(folder)]) == 1


def test_the_report_states_the_options_it_was_made_with():
    shapetable = (REPO / "results" / "shapetable" / "report.md").read_text()
    assert report_options(shapetable) == {"n_boot": 4000, "seed": 0, "alpha": 0.05,
                                          "min_questions": 30}
    main_job = (REPO / "results" / "report.md").read_text()
    assert report_options(main_job)["n_boot"] == 2000


def test_a_difference_names_the_line_and_both_values(tmp_path):
    path = tmp_path / "t.md"
    path.write_text("a\n| x | 0.12 [0.10, 0.14] |\nc\n")
    assert compare_text(path, "a\n| x | 0.12 [0.10, 0.14] |\nc\n") == []
    assert compare_text(path, "a\n| x | 0.13 [0.10, 0.14] |\nc\n") == [
        f"{path}:2: committed '0.12' != re-derived '0.13'"]


@pytest.mark.parametrize("prose, figure", [
    ("at 12 % fewer billed tokens", "12 % fewer"), ("took 7 min 28 s", "7 min 28 s"),
    ("replays 22 s", "22 s"),
    ("production bills 60,982 tokens a question", "60,982 tokens a question"),
    ("+7,041 tokens/q more", "+7,041")])
def test_shares_timings_and_bills_are_figures(prose, figure):
    from evals.analysis.docs_blocks import stray_figures

    assert [f for _, f in stray_figures(prose)] == [figure]


@pytest.mark.parametrize("prose", [
    "every frame counts 5,024 tokens", "a 15 % reserve", "default `60 s`", "Python 3.11",
    "<!-- example -->\n`make run` took 7 min.\n<!-- /example -->"])
def test_settings_and_spans_are_not_stray(prose):
    from evals.analysis.docs_blocks import stray_figures

    assert stray_figures(prose) == []


def test_uncommitted_run_folders_are_not_scanned(checkout, capsys):
    notes = checkout / "results" / "runs" / "default" / "notes.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("recall 0.45 [0.28, 0.58]\n")
    assert _check(checkout, capsys) == (0, "")
    (checkout / "results" / "notes.md").write_text("recall 0.45 [0.28, 0.58]\n")
    rc, err = _check(checkout, capsys)
    assert rc == 1 and "results/notes.md:1: figure '0.45'" in err


def test_a_compression_without_a_baseline_reads_a_dash_with_why():
    # shapetable/report.md printed "n/ax" where neither full nor the uncompacted bill was there;
    # w-check read it "n/a", w-table "– (no full history to compare)" (issue 44.2: a dash with
    # why); the merge keeps w-table's
    from types import SimpleNamespace

    from evals.analysis.report import compression_cell

    assert compression_cell(SimpleNamespace(compression_vs_text=float("nan"),
                                            compression_baseline=None)) == (
        "– (no full history to compare)")
    assert compression_cell(SimpleNamespace(compression_vs_text=5.9234,
                                            compression_baseline="full")) == "5.92x"
    assert compression_cell(SimpleNamespace(compression_vs_text=7.2,
                                            compression_baseline="uncompacted")) == (
        "7.20x (vs uncompacted)")


def test_a_hand_edit_of_an_outcome_table_is_caught(checkout, capsys):
    # the first row of the depth-bin table (the first arm's first bin), its recall edited by hand
    table = checkout / "results" / "outcomes" / "outcomes_by_depth_bin.csv"
    lines = table.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    field = header.index("recall")
    cells = lines[1].rstrip("\n").split(",")
    recall = cells[field]
    assert recall != "0.999"
    cells[field] = "0.999"
    lines[1] = ",".join(cells) + "\n"
    table.write_text("".join(lines))
    rc, err = _check(checkout, capsys)
    assert rc == 1
    assert (f"results/outcomes/outcomes_by_depth_bin.csv:2: field {field + 1} recall: "
            f"committed '0.999' != re-derived '{recall}'") in err


def test_rederive_rewrites_the_outcome_tables_from_their_records(tmp_path, capsys):
    # only the outcome folder: --rederive rewrites what it finds, and nothing else is there
    folder = tmp_path / "results" / "outcomes"
    shutil.copytree(REPO / "results" / "outcomes", folder)
    committed = {p.name: p.read_text() for p in folder.glob("*.csv")}
    table = folder / "outcomes_by_length_bin.csv"
    table.write_text(table.read_text().replace("\n", "\nedited,row\n", 1))
    (folder / "outcomes.md").write_text((folder / "outcomes.md").read_text() + "hand note\n")
    assert main(["--rederive", "--no-plots", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "results/outcomes/outcomes.md" in out
    assert "results/outcomes/outcomes_by_length_bin.csv" in out
    assert {p.name: p.read_text() for p in folder.glob("*.csv")} == committed
    assert not (folder / "outcomes.md").read_text().endswith("hand note\n")
