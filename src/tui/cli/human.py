"""Commands where a person and a task talk: `tui ask` (from inside a task), `tui questions`,
`tui answer`, `tui accept`, `tui reject`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli.common import err, open_store
from tui.engine.errors import EngineError
from tui.store.errors import StoreError

if TYPE_CHECKING:  # the engine and the daemon client: imported by the commands that use them
    from tui.store.db import Store
    from tui.store.records import QuestionRecord


async def cmd_ask(args: argparse.Namespace) -> int:
    from tui.daemon.asking import ask_person
    from tui.engine.asking import answer_values, question_payload
    from tui.model.duration import parse_duration

    task_id, run_id, db = (os.environ.get(k) for k in ("TUI_TASK_ID", "TUI_RUN_ID", "TUI_DB"))
    if not (task_id and run_id and db):
        err(
            "`tui ask` works inside a task run by tui (TUI_TASK_ID, TUI_RUN_ID and TUI_DB "
            "are not set)"
        )
        return 2
    if not run_id.isdigit():
        err(
            f"TUI_RUN_ID must be a run number, got {run_id!r}: `tui ask` works inside a "
            "task run by tui, which sets it"
        )
        return 2
    try:
        timeout = parse_duration(args.timeout) if args.timeout else 0.0
    except ValueError as e:
        err(f"--timeout: {e}")
        return 2
    cancelled = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, cancelled.set)
    payload = question_payload(args.question, args.option or [], args.multi)
    try:
        q = await ask_person(
            Path(db), task_id, int(run_id), payload, timeout=timeout, stop=cancelled
        )
    except EngineError as e:
        err(str(e))
        return 2
    if q is None or cancelled.is_set():
        err("the task was cancelled while waiting for an answer")
        return 143
    if q.status == "expired" and timeout:
        err(f"no answer within {args.timeout}")
        return 3
    values = answer_values(q, args.question)
    if values is None:
        err(f"the question was {q.status} without an answer")
        return 3
    for item in values:
        print(item)
    return 0


async def cmd_questions(args: argparse.Namespace) -> int:
    async with open_store(args.db, create=False) as store:
        questions = await store.questions()
        names = {r.id: r.name for r in await store.list_tasks()}
    if args.json:
        print(
            json.dumps(
                [{**q.to_json(), "task_name": names.get(q.task_id, "")} for q in questions],
                indent=2,
            )
        )
        return 0
    if not questions:
        print("no open questions")
    for q in questions:
        print(f"{q.id[:8]}  {names.get(q.task_id, q.task_id[:8])}  ({q.kind})")
        for line in describe(q):
            print(f"    {line}")
    return 0


def describe(q: QuestionRecord) -> list[str]:
    """Plain-text lines for a question, an approval or a review."""
    p = q.payload
    if q.kind == "review":
        return ["result:", *str(p.get("result", "")).splitlines()[-20:]]
    if q.kind == "approval":
        return [f"{p.get('tool', 'tool')}: {p.get('summary', '')}"]
    out: list[str] = []
    for item in p.get("questions", []):
        multi = " (choose any)" if item.get("multiSelect") else ""
        out.append(f"{item.get('question', '')}{multi}")
        for i, opt in enumerate(item.get("options", []), start=1):
            desc = f" — {opt['description']}" if opt.get("description") else ""
            out.append(f"  {i}. {opt.get('label', '')}{desc}")
    return out


async def _find_question(store: Store, ref: str) -> QuestionRecord:
    q = await store.get_question(ref)
    if q is not None:
        return q
    task_id = await store.resolve(ref)  # a task id or name with one open question
    open_ = await store.questions(task_id=task_id)
    if len(open_) != 1:
        raise StoreError(
            f"{ref!r} has {len(open_)} open questions; give a question id (see `tui questions`)"
        )
    return open_[0]


def build_answer(q: QuestionRecord, args: argparse.Namespace) -> dict[str, Any]:
    if q.kind == "approval":
        if args.deny is not None:
            return {"behavior": "deny", "message": args.deny}
        return {"behavior": "allow_always" if args.always else "allow"}
    if q.kind == "review":
        raise EngineError("reviews take `tui accept ID` or `tui reject ID --comment TEXT`")
    questions = q.payload.get("questions", [])
    given = list(args.answer)
    text = getattr(args, "text", None)
    if text is not None:
        if given or len(questions) != 1:
            raise EngineError("--text answers a single question, instead of option numbers")
        return {"answers": {questions[0]["question"]: text}}
    if not given:
        raise EngineError("give the answer: an option label (or its number) or free text")
    answers: dict[str, Any] = {}
    if len(questions) == 1:
        pairs = [(questions[0], given)]
    elif len(given) == len(questions):
        pairs = [(item, [g]) for item, g in zip(questions, given, strict=True)]
    else:
        raise EngineError(f"this asks {len(questions)} questions: give one answer for each")
    for item, values in pairs:
        if item.get("options") and not item.get("multiSelect") and len(values) > 1:
            values = [" ".join(values)]  # a label of several words, typed unquoted
        labels = [_label(item, v) for v in values]
        answers[item["question"]] = labels if item.get("multiSelect") else " ".join(labels)
    return {"answers": answers}


def _label(item: dict[str, Any], value: str) -> str:
    """An option by number or label; free text only where the question has no options
    (a typo such as `9` for three options must not become the answer "9")."""
    options = [o.get("label", "") for o in item.get("options", [])]
    if not options:
        return value
    # ASCII digits only, and few: "²" is a digit to str.isdigit and not to int().
    if value.isascii() and value.isdigit() and len(value) < 6 and 1 <= int(value) <= len(options):
        return options[int(value) - 1]
    for label in options:
        if value.casefold() == label.casefold():
            return label
    listed = ", ".join(f"{i}. {label}" for i, label in enumerate(options, 1))
    shown = value if len(value) <= 60 else value[:57] + "..."
    raise EngineError(
        f"{shown!r} is not an option of {item.get('question', 'the question')!r}: give one of"
        f" {listed} — or any other answer with --text TEXT"
    )


async def cmd_answer(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected

    async with open_store(args.db) as store:
        q = await _find_question(store, args.question)
        async with connected(store) as client:
            print(await client.answer(q.id, build_answer(q, args)))
    return 0


async def cmd_review(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected

    async with open_store(args.db) as store:
        task_id = await store.resolve(args.task)
        async with connected(store) as client:
            if args.command == "accept":
                print(await client.accept(task_id))
            else:
                print(await client.reject(task_id, args.comment))
    return 0


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    ask = sub.add_parser("ask", help="from inside a task: ask a person and print the answer")
    ask.add_argument("question")
    ask.add_argument("--option", action="append", metavar="LABEL", help="a choice (repeat)")
    ask.add_argument("--multi", action="store_true", help="allow several choices")
    ask.add_argument("--timeout", metavar="DURATION", help="give up after this long (e.g. 10m)")

    qs = sub.add_parser("questions", parents=[db], help="list open questions")
    qs.add_argument("--json", action="store_true")

    ans = sub.add_parser("answer", parents=[db], help="answer a question or an approval")
    ans.add_argument("question", metavar="ID", help="question id (prefix), or a task with one")
    ans.add_argument(
        "answer", nargs="*", metavar="ANSWER", help="option labels or numbers, or free text"
    )
    ans.add_argument(
        "--text", metavar="TEXT", help='a free-text answer ("Other") instead of an option'
    )
    ans.add_argument("--deny", metavar="MESSAGE", help="refuse an approval, saying why")
    ans.add_argument(
        "--always", action="store_true", help="allow this tool for the rest of the task"
    )

    acc = sub.add_parser("accept", parents=[db], help="accept a task waiting for review")
    acc.add_argument("task", metavar="ID")
    rej = sub.add_parser("reject", parents=[db], help="reject a reviewed task with a comment")
    rej.add_argument("task", metavar="ID")
    rej.add_argument("--comment", required=True, metavar="TEXT")
