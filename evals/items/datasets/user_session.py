"""A user's own session and questions: ``dataset=session``.

Why: the question a researcher brings is about *their* sessions. The session file is what the
pipeline itself writes (a JSONL session tree; its active branch is replayed) or a JSON list of
agent messages (what ``snapcompact serialize`` reads). The questions file is JSONL, one object a
line: ``{"id", "question", "answers": [...], "evidence"}``, where ``evidence`` is text that occurs
verbatim in one message of the session (it locates the answer, for ``evidence_round``, and for
the offline reader). Both files are hostile input: every problem is one error naming the file
and the line (the session's checks are the library's, ``load_session_messages``).
"""

from __future__ import annotations

import json
from pathlib import Path

from evals.items.qa_items import Question
from evals.items.sessions import SessionItem, make_session_item, message_text

DATASET = "session"


def _text_field(row: dict, name: str, where: str) -> str:
    value = row[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {name!r} must be a non-empty string, got "
                         f"{_kind(value)}")
    return value


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    return "null" if value is None else type(value).__name__


def _question(row: object, where: str) -> Question:
    """One checked question: strings where strings belong, never a value coerced by ``str``."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a question must be a JSON object, got {_kind(row)}")
    missing = [k for k in ("id", "question", "answers", "evidence") if k not in row]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
    qid = row["id"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise ValueError(f"{where}: 'id' must be a non-empty string or an integer, got "
                         f"{_kind(qid)}")
    answers = row["answers"]
    if not isinstance(answers, list) or not answers or not all(
            isinstance(a, str) and a.strip() for a in answers):
        raise ValueError(f"{where}: 'answers' must be a non-empty list of non-empty strings")
    return Question(question_id=str(qid), question=_text_field(row, "question", where),
                    answers=tuple(answers), evidence=_text_field(row, "evidence", where),
                    meta={"kind": "user"})


def _questions(path: Path, texts: list[str]) -> list[Question]:
    """The questions at ``path``; each one's evidence must occur verbatim in one of ``texts``
    (the session's messages). Every error names the file and the line."""
    if not path.is_file():
        raise ValueError(f"questions file {path} does not exist")
    out: list[Question] = []
    seen: dict[str, int] = {}
    lines = path.read_bytes().removeprefix(b"\xef\xbb\xbf").split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(raw)
        except RecursionError:
            raise ValueError(f"{where}: nested too deeply to read") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, huge integers
            raise ValueError(f"{where}: not a JSON object: {exc}") from None
        question = _question(row, where)
        if question.question_id in seen:
            raise ValueError(f"{where}: id {question.question_id!r} is already used on line "
                             f"{seen[question.question_id]}")
        if not any(question.evidence in text for text in texts):
            raise ValueError(f"{where}: the evidence of question {question.question_id!r} occurs "
                             f"verbatim in no message of the session: {question.evidence[:80]!r}")
        seen[question.question_id] = number
        out.append(question)
    if not out:
        raise ValueError(f"questions file {path} holds no questions")
    return out


def load_user_session(*, path: str | None = None, questions: str | None = None,
                      seed: int = 0) -> list[SessionItem]:
    """One item: the session at ``path`` with the questions at ``questions``."""
    # local (cost): the session reader loads the compaction pipeline, +0.53 s on listing datasets
    from snapcompact.compaction import load_session_messages

    if not path or not questions:
        raise ValueError("dataset=session needs dataset.params.path=SESSION and "
                         "dataset.params.questions=QUESTIONS.jsonl")
    session_path, questions_path = Path(path).expanduser(), Path(questions).expanduser()
    messages = load_session_messages(session_path)
    questions_found = _questions(questions_path, [message_text(m) for m in messages])
    return [make_session_item(DATASET, messages, questions_found, seed,
                              {"path": session_path.name, "questions": questions_path.name})]
