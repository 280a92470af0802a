"""The shape of a question a task asks a person (`tui ask`, MCP ``ask_user``) and of its
answer; asking itself is one request to the engine (``tui.daemon.asking``)."""

from __future__ import annotations

from tui.engine.api import Asked


def question_payload(text: str, options: list[str], multi: bool, header: str = "") -> dict:
    """QuestionJSON, the same shape Claude's AskUserQuestion uses."""
    return {
        "questions": [
            {
                "question": text,
                "header": header,
                "options": [{"label": o, "description": ""} for o in options],
                "multiSelect": multi,
            }
        ]
    }


def answer_values(q: Asked, text: str) -> list[str] | None:
    """What the person chose or wrote for question ``text``; None if it closed unanswered."""
    if q.status != "answered" or not q.answer:
        return None
    value = q.answer.get("answers", {}).get(text, "")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
