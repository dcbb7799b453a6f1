"""Where frames pay: content types of the discarded history and characters per billed token,
with the expected values worked by hand."""

from __future__ import annotations

import pytest

from evals.analysis.frame_pay import (
    content_type,
    discarded_by_type,
    draw,
    frame_chars_per_token,
    frame_tokens,
    pay_rows,
    to_markdown,
)


def _msg(role, text, tool=None):
    m = {"role": role, "content": [{"type": "text", "text": text}]}
    if tool:
        m["toolName"] = tool
    return m


def test_content_types():
    assert content_type(_msg("user", "{\"a\": 1}"), "{\"a\": 1}") == "prose"
    assert content_type(_msg("toolResult", "", "bash"), '{"a": 1}') == "json"
    assert content_type(_msg("toolResult", "", "bash"), '{"a": 1}\n{"b": [2]}') == "json"  # JSONL
    assert content_type(_msg("toolResult", "", "read"), "def f():\n    return 1") == "code"
    assert content_type(_msg("toolResult", "", "bash"), "3 passed in 0.1s") == "logs"


def test_the_kept_tail_is_not_discarded():
    messages = [_msg("user", "old prose"), _msg("toolResult", "x" * 10, "bash"),
                _msg("assistant", "y" * 30)]
    # keeping 30 characters keeps the last message only
    assert discarded_by_type(messages, keep_chars=30) == {"prose": "old prose", "logs": "x" * 10}


def test_a_full_frame_of_8on16_for_claude_sonnet_4_5():
    # 8on16-bw: 1568 px, cells 8 x 16 -> 196 x 98 = 19,208 characters; Sonnet 4.5 sees a 1568 px
    # frame at 1092 px and bills ceil(1092 / 28)^2 = 39^2 = 1,521 tokens
    value, resized = frame_chars_per_token("a" * 19_208, "8on16-bw", "claude-sonnet-4-5",
                                           "anthropic-messages")
    assert value == pytest.approx(19_208 / 1_521)
    assert resized


def test_a_text_one_row_past_a_frame_is_drawn_and_billed_frame_by_frame():
    # 19,208 + 196 characters of 8on16-bw: one full frame and a second cropped to its one row,
    # 1568 x 16 px: not shrunk (its long edge is 1568), billed ceil(1568/28) * ceil(16/28) =
    # 56 * 1 = 56 tokens; so 19,404 characters over 1,521 + 56 = 1,577 tokens
    drawn = draw("a" * 19_404, "8on16-bw")
    assert drawn.sizes == ((1568, 1568), (1568, 16))
    assert drawn.drawn_chars == 19_404
    assert frame_tokens(drawn, "claude-sonnet-4-5", "anthropic-messages") == (1_577, True)
    value, _ = frame_chars_per_token("a" * 19_404, "8on16-bw", "claude-sonnet-4-5",
                                     "anthropic-messages")
    assert value == pytest.approx(19_404 / 1_577)


def test_line_breaks_cost_cells_not_frames_in_a_grid_shape():
    # 100 lines of 10 characters: the grid flows them with a newline glyph each, 100 x 11 =
    # 1,100 cells, 6 rows of 196 (the last partial): one frame 6 x 16 = 96 px high, billed
    # ceil(1568/28) * ceil(96/28) = 56 * 4 = 224 tokens for the 1,099 characters of the text
    text = "\n".join(["abcdefghij"] * 100)
    drawn = draw(text, "8on16-bw")
    assert drawn.sizes == ((1568, 96),)
    assert frame_tokens(drawn, "claude-sonnet-4-5", "anthropic-messages") == (224, False)


def test_the_table_says_whether_frames_pay():
    messages = [_msg("user", "a question about the plan " * 200),
                _msg("toolResult", '{"id": 1, "ok": true}\n' * 300, "bash"),
                _msg("assistant", "z" * 100)]
    rows = pay_rows("s", messages, shapes=("8on16-bw",),
                    lines=(("Claude Sonnet 4.5", "claude-sonnet-4-5", "anthropic-messages"),),
                    keep_chars=100)
    assert {r.content for r in rows} == {"prose", "json"}
    assert all(r.frame_chars_per_token["8on16-bw"] > 0 for r in rows)
    assert "| s | Claude Sonnet 4.5 | json |" in to_markdown(rows, ("8on16-bw",))


def test_the_figure_pools_characters_over_tokens_across_sessions(tmp_path):
    from evals.analysis.frame_pay import PayRow
    from evals.analysis.frame_pay_plot import pooled, write_figure

    rows = [PayRow("a", "Claude", "logs", 100, 2.0, {"8on16-bw": 4.0}),
            PayRow("b", "Claude", "logs", 300, 3.0, {"8on16-bw": 6.0}),
            PayRow("a", "Claude", "prose", 50, 5.0, {"8on16-bw": 2.5})]
    values = pooled(rows, ["8on16-bw"])
    # logs: text 400 chars over 100/2 + 300/3 = 150 tokens; frames 400 over 25 + 50 = 75
    assert values[("Claude", "logs")] == {"text": 400 / 150, "8on16-bw": 400 / 75}
    assert values[("Claude", "prose")] == {"text": 5.0, "8on16-bw": 2.5}
    path = tmp_path / "where_snapcompact_pays.png"
    assert write_figure(rows, path, ["8on16-bw"]) == values
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_compares_the_committed_table_with_its_rebuild(tmp_path, monkeypatch):
    import evals.analysis.frame_pay as frame_pay
    from evals.analysis.rederive import check_all, check_frame_pay

    rebuilt = {"frame_pay.md": "`cmd`\n\n| a |\n", "frame_pay.csv": "x,y\n1,2\n"}
    monkeypatch.setattr(frame_pay, "rebuild_frame_pay", lambda: rebuilt)
    folder = tmp_path / "results" / "frame_pay"
    folder.mkdir(parents=True)
    for name, text in rebuilt.items():
        (folder / name).write_text(text)
    assert check_frame_pay(folder) == []
    (folder / "frame_pay.csv").write_text("x,y\n1,3\n")  # a hand edit
    problems = check_all(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("results/frame_pay/frame_pay.csv:2")
