"""A user's own session and questions: ``dataset=session``.

Why: the question a researcher brings is about *their* sessions. The session file is what the
pipeline itself writes (a JSONL session tree; its active branch is replayed) or a JSON list of
agent messages (what ``snapcompact serialize`` reads). The questions file is JSONL, one object a
line: ``{"id", "question", "answers": [...], "evidence"}``, where ``evidence`` is text that occurs
verbatim in one message of the session (it locates the answer, for ``evidence_round``, and for
the offline reader). Bad lines are reported with their line number.
"""

from __future__ import annotations

import json
from pathlib import Path

from evals.items import Question
from evals.sessions import SessionItem, make_session_item

DATASET = "session"


def _questions(path: Path) -> list[Question]:
    if not path.is_file():
        raise ValueError(f"questions file {path} does not exist")
    out: list[Question] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not a JSON object: {exc}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: a question must be a JSON object")
        missing = [k for k in ("id", "question", "answers", "evidence") if k not in row]
        if missing:
            raise ValueError(f"{path}:{number}: missing field(s) {', '.join(missing)}")
        answers = row["answers"]
        if isinstance(answers, str) or not isinstance(answers, list):
            raise ValueError(f"{path}:{number}: 'answers' must be a list of strings")
        try:
            out.append(Question(question_id=str(row["id"]), question=str(row["question"]),
                                answers=tuple(str(a) for a in answers),
                                evidence=str(row["evidence"]), meta={"kind": "user"}))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    if not out:
        raise ValueError(f"questions file {path} holds no questions")
    return out


def load_user_session(*, path: str | None = None, questions: str | None = None,
                      seed: int = 0) -> list[SessionItem]:
    """One item: the session at ``path`` with the questions at ``questions``."""
    from snapcompact.compaction import load_session_messages

    if not path or not questions:
        raise ValueError("dataset=session needs dataset.params.path=SESSION and "
                         "dataset.params.questions=QUESTIONS.jsonl")
    session_path, questions_path = Path(path).expanduser(), Path(questions).expanduser()
    messages = load_session_messages(session_path)
    return [make_session_item(DATASET, messages, _questions(questions_path), seed,
                              {"path": session_path.name, "questions": questions_path.name})]
