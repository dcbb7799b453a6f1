"""Settings as production reads them, and the archive production used to write, LLM mocked.

``snapcompact.maxFrameDataBytes`` caps the frames re-attached to the next request, settings files
are found at the documented user and project paths, and a legacy frames-only archive still
carries its summary (with a notice).
"""

from __future__ import annotations

import json
import warnings

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.archive import PRESERVE_KEY, get_preserved_archive
from snapcompact.compaction import (
    CompactionEntry,
    CompactionPipeline,
    Session,
    discover_settings,
    settings_paths,
)


def _frames_in(messages) -> tuple[int, str]:
    from snapcompact.archive import ImageBlock, TextBlock

    first = messages[0]
    images = sum(isinstance(b, ImageBlock) for b in first.content)
    text = "".join(b.text for b in first.content if isinstance(b, TextBlock))
    return images, text


def test_max_frame_data_bytes_setting_caps_reattached_frames():
    # pinned frames are all full pages, so a budget of the largest frame fits exactly one
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings("snapcompact", policy="pinned"),
                           complete=FakeLLM())
    _fill(p, 3, 40)
    outcome = p.compact()
    assert outcome.strategy == "snapcompact"
    archive = get_preserved_archive(outcome.entry.preserve_data)
    assert archive is not None and len(archive.frames) >= 2
    images, _ = _frames_in(p.llm_messages())
    assert images == len(archive.frames)  # 3 MB default: every small frame fits
    one_frame = max(len(f.data) for f in archive.frames)
    for limit, expected in ((0, 0), (one_frame, 1)):
        capped = CompactionPipeline(p.session, CLAUDE, settings=_settings(
            "snapcompact", policy="pinned", maxFrameDataBytes=limit))
        images, text = _frames_in(capped.llm_messages())
        assert images == expected
        assert "could not be included" in text  # the omitted frames are announced, not silently lost
        # The pipeline's own estimate counts what is sent: fewer frames, fewer tokens.
        assert capped.estimate_tokens() < p.estimate_tokens()


def test_settings_found_at_the_user_and_project_paths(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".omp" / "agent").mkdir(parents=True)
    (project / ".omp").mkdir(parents=True)
    (home / ".omp" / "agent" / "config.yml").write_text(
        "theme: dark\ncompaction:\n  strategy: snapcompact\n  keepRecentTokens: 30000\n  supersedeReads: true\n")
    (project / ".omp" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 12000},
                                                                "snapcompact": {"maxFrameDataBytes": 1000}}))
    assert settings_paths(project, home=home, env={}) == [home / ".omp" / "agent" / "config.yml",
                                                          project / ".omp" / "settings.json"]
    settings, notes = discover_settings(project, home=home, env={})
    assert settings.compaction.strategy == "snapcompact"  # user file
    assert settings.compaction.keep_recent_tokens == 12000  # project file wins
    assert settings.snapcompact.max_frame_data_bytes == 1000
    assert notes == ((f"{home / '.omp' / 'agent' / 'config.yml'}: compaction.supersedeReads is not a setting "
                      "this library uses (ignored)"),)
    # PI_CODING_AGENT_DIR moves the user directory; nothing there means defaults plus the project.
    settings, _ = discover_settings(project, home=home, env={"PI_CODING_AGENT_DIR": str(tmp_path / "none")})
    assert settings.compaction.strategy == "context-full" and settings.compaction.keep_recent_tokens == 12000
    (project / ".omp" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 0}}))
    try:
        discover_settings(project, home=home, env={})
    except ValueError as exc:
        assert "settings.json" in str(exc) and "compaction.keepRecentTokens must be >= 1" in str(exc)
    else:
        raise AssertionError("a bad value in a discovered file must fail")


def test_legacy_frames_only_archive_carries_its_summary_with_a_notice():
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings("snapcompact", policy="foveated"),
                           complete=FakeLLM())
    _fill(p, 5, 30)
    first = p.compact().entry
    archive = get_preserved_archive(first.preserve_data)
    assert archive is not None and archive.frames
    # Rewrite the entry as a legacy archive: frames, no source text.
    legacy = {PRESERVE_KEY: {"frames": [f.to_json() for f in archive.frames], "totalChars": archive.total_chars,
                             "truncatedChars": 0}}
    branch = p.session.get_branch()
    index = next(i for i, e in enumerate(branch) if isinstance(e, CompactionEntry))
    session = Session()
    for entry in branch[:index]:
        session.append(entry)
    session.append_compaction("LEGACY-SUMMARY earlier work on the parser", first.first_kept_entry_id,
                              first.tokens_before, preserve_data=legacy)
    p2 = CompactionPipeline(session, CLAUDE, settings=_settings("snapcompact", policy="foveated"))
    _fill(p2, 6, 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = p2.compact()
    assert outcome.strategy == "snapcompact"
    assert any("without source text (a legacy archive)" in w for w in outcome.warnings)
    assert any("legacy archive" in str(w.message) for w in caught)
    new = get_preserved_archive(outcome.entry.preserve_data)
    source = "".join(t or "" for t in (new.text, new.text_head))
    assert "[Summary of earlier history]" in source and "LEGACY-SUMMARY" in source
