"""`tui` command line: argument parsing and the error boundary (no traceback ever reaches users)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from tui import __version__
from tui.engine.scheduler import EngineError
from tui.model.issues import TaskFileError
from tui.store.db import StoreError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tui", description="A terminal cockpit for coding-agent tasks."
    )
    p.add_argument("--version", action="version", version=f"tui {__version__}")
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db", metavar="PATH", help="database file (default: $TUI_DB or the user data dir)"
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", parents=[db], help="run task files until every task is final")
    run.add_argument("files", nargs="*", metavar="FILE", help="YAML task files or directories")
    run.add_argument("--concurrency", type=int, default=4, metavar="N")
    run.add_argument("--json", action="store_true", help="one JSON object per transition")
    run.add_argument("--shell", default="bash", help="shell for shell tasks (default: bash)")
    run.add_argument(
        "--manual-approve", action="store_true", help="keep new tasks PENDING until `tui approve`"
    )

    val = sub.add_parser("validate", help="check task files and report every problem")
    val.add_argument("files", nargs="+", metavar="FILE")

    ls = sub.add_parser("ls", parents=[db], help="list tasks")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--state", metavar="S", help="only tasks in this state")
    ls.add_argument("--tag", metavar="T", help="only tasks with this tag")

    logs = sub.add_parser("logs", parents=[db], help="print a task's output")
    logs.add_argument("task", metavar="ID")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("--stream", choices=["stdout", "stderr"])

    for name, text in (
        ("cancel", "cancel a task (kills its process group)"),
        ("retry", "queue a failed, timed-out or cancelled task again"),
        ("approve", "let a PENDING task run"),
    ):
        c = sub.add_parser(name, parents=[db], help=text)
        c.add_argument("task", metavar="ID", help="id, unique id prefix, or task name")
    from tui.cli import human

    human.add_parsers(sub, db)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return asyncio.run(_dispatch(args))
    except KeyboardInterrupt:
        return 130
    except TaskFileError as e:
        for issue in e.issues:
            print(f"error: {issue}", file=sys.stderr)
        return 2
    except (StoreError, EngineError) as e:
        print(f"tui: {e}", file=sys.stderr)
        return 1


async def _dispatch(args: argparse.Namespace) -> int:
    from tui.cli import control, human, inspect, run

    handlers = {
        "run": run.cmd_run,
        "validate": run.cmd_validate,
        "ls": inspect.cmd_ls,
        "logs": inspect.cmd_logs,
        "cancel": control.cmd_control,
        "retry": control.cmd_control,
        "approve": control.cmd_control,
        "ask": human.cmd_ask,
        "questions": human.cmd_questions,
        "answer": human.cmd_answer,
        "accept": human.cmd_review,
        "reject": human.cmd_review,
    }
    return await handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
