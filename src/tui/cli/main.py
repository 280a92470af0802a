"""`tui` command line: argument parsing and the error boundary (no traceback ever reaches users)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from tui import __version__

if TYPE_CHECKING:
    import argparse

# Each command imports what it runs (`tui run` never loads the app); asyncio and the error
# boundary's classes once a command runs (`tui --version` loads none of it).

_CONCURRENCY = "tasks at once (default: the database's stored value, [settings] concurrency, 4)"
_SHELL = "shell for shell tasks (default: the database's stored one, [settings] shell, bash)"
_EXECUTOR = "where tasks run: local processes, or a Ray cluster (default: [executor] kind)"
_FORCE = "submit the files' tasks even if the same tasks are already there, unfinished"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` one of the commands declared here (`run`,
    `ls`, ...), without the other modules' commands: importing them cost every `tui run`
    ~5 ms, and a command's own options parse the same without its siblings."""
    import argparse

    from tui.model.states import WORDS

    p = argparse.ArgumentParser(
        prog="tui", description="A terminal cockpit for coding-agent tasks."
    )
    p.add_argument("--version", action="version", version=f"tui {__version__}")
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db", metavar="PATH", help="database file (default: $TUI_DB or the user data dir)"
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    op = sub.add_parser("open", parents=[db], help="open the app (the default command)")
    op.add_argument("files", nargs="*", metavar="FILE", help="task files to submit first")
    op.add_argument("--concurrency", type=int, metavar="N", help=_CONCURRENCY)
    op.add_argument("--no-mouse", action="store_true", help="leave the mouse to the terminal")
    op.add_argument(
        "--fps", type=int, metavar="N", help="cap redraws per second (default 60, 20 over SSH)"
    )
    op.add_argument("--shell", help=_SHELL)
    op.add_argument("--force", action="store_true", help=_FORCE)
    op.add_argument(
        "--foreground",
        action="store_true",
        help="run the engine in the app's process, no daemon (tasks stop when the app quits;"
        " also TUI_FOREGROUND=1)",
    )

    run = sub.add_parser("run", parents=[db], help="run task files until every task is final")
    run.add_argument("files", nargs="*", metavar="FILE", help="YAML task files or directories")
    run.add_argument("--concurrency", type=int, metavar="N", help=_CONCURRENCY)
    run.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per transition, states as stored (RUNNING, COMPLETED…)",
    )
    run.add_argument("--shell", help=_SHELL)
    run.add_argument("--executor", choices=("local", "ray"), help=_EXECUTOR)
    run.add_argument("--force", action="store_true", help=_FORCE)
    run.add_argument(
        "--manual-approve", action="store_true", help="keep new tasks pending until `tui approve`"
    )

    val = sub.add_parser("validate", help="check task files and report every problem")
    val.add_argument("files", nargs="+", metavar="FILE")

    ls = sub.add_parser("ls", parents=[db], help="list tasks", formatter_class=_words_formatter())
    ls.add_argument(
        "--json",
        action="store_true",
        help="JSON for scripts: states as stored (COMPLETED, TIMED_OUT…), not the table's words",
    )
    ls.add_argument(
        "--state",
        metavar="STATE",
        help=f"only tasks in this state: {', '.join(WORDS)} (or a stored name: COMPLETED…);"
        " failed also takes timed out and over budget, as the app counts them; waiting is"
        " needs-you or blocked; finished is every end",
    )
    ls.add_argument("--tag", metavar="T", help="only tasks with this tag")

    logs = sub.add_parser("logs", parents=[db], help="print a task's output")
    logs.add_argument("task", metavar="ID")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("--stream", choices=["stdout", "stderr"])
    logs.add_argument("--raw", action="store_true", help="the agent CLI's own protocol lines")

    for name, text in (
        ("cancel", "cancel a task (kills its process group)"),
        ("retry", "queue a failed, timed-out or cancelled task again"),
        ("approve", "let a pending task run"),
    ):
        c = sub.add_parser(name, parents=[db], help=text)
        c.add_argument("task", metavar="ID", help="id, unique id prefix, or task name")
    if command in sub.choices:
        return p
    from tui.cli import (
        config_cmd,
        daemon_cmd,
        doctor,
        export_cmd,
        human,
        talk_cmd,
        task,
        web,
        worktree_cmd,
    )

    groups = (human, task, config_cmd, doctor, daemon_cmd, web, worktree_cmd, talk_cmd, export_cmd)
    for group in groups:
        group.add_parsers(sub, db)
    return p


def _words_formatter() -> type[argparse.HelpFormatter]:
    import argparse
    import textwrap

    class WordsFormatter(argparse.HelpFormatter):
        """Help wrapped between words only: "needs-you" and "over-budget" stay whole."""

        def _split_lines(self, text: str, width: int) -> list[str]:
            return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    return WordsFormatter


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what the parser would print, without building it
        print(f"tui {__version__}")
        return 0
    if not argv or argv[0].startswith("--db") or argv[0] in ("--no-mouse", "--fps", "--foreground"):
        argv.insert(0, "open")  # `tui` alone opens the app
    untune = None
    if argv[0] in _GC_TUNED:  # from the first import on: see hold_gc
        from tui.gc_tuning import hold_gc

        untune = hold_gc()
    try:
        return _main(argv)
    finally:
        if untune is not None:
            untune()


def _main(argv: list[str]) -> int:
    from tui.cli.task import split_task_args

    argv, task_args = split_task_args(argv)
    args = build_parser(argv[0]).parse_args(argv)
    if task_args:
        args.task_args = task_args
    import asyncio

    from tui.engine.errors import EngineError
    from tui.model.issues import TaskFileError
    from tui.store.errors import StoreError

    _fast_child_watcher()
    try:
        return asyncio.run(_dispatch(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tui logs ID | head`: the reader has all it wanted
        from tui.cli.common import discard_stdout

        discard_stdout()
        return 141  # as a shell reports a command ended by SIGPIPE
    except TaskFileError as e:
        for issue in e.issues:
            print(f"error: {issue}", file=sys.stderr)
        for issue in e.warnings:  # a broken template beside a broken config: both are news
            print(f"warning: {issue}", file=sys.stderr)
        return 2
    except (StoreError, EngineError) as e:
        print(f"tui: {e}", file=sys.stderr)
        return 1
    except UnicodeEncodeError:  # an id or a text from argv that cannot be stored or sent
        bad = [a for a in argv if not _is_utf8(a)]
        if not bad:
            raise
        print(
            f"tui: argument {bad[0]!r} is not UTF-8 text (bytes of another encoding?); "
            "give ids, names and answers in UTF-8 (e.g. convert with iconv)",
            file=sys.stderr,
        )
        return 2


def entry() -> NoReturn:
    """The `tui` command (and `python -m tui`): ``main``, then out without tearing the
    interpreter down when nothing is left to wait for. The teardown — a last garbage
    collection over every object of the run, then every module freed — was ~40 ms after a
    1,000-task `tui run` had finished, with its database closed and its output written."""
    code = main()
    import threading

    if threading.active_count() > 1:  # a thread still at work: the usual exit joins it
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # its reader has gone (`| head`): as the exit would say
            code = code or 141
        except (OSError, ValueError):  # closed: nothing of ours is waiting in it
            pass
    if "logging" in sys.modules:  # its handlers' buffers, as its exit hook does
        sys.modules["logging"].shutdown()
    os._exit(code)


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # argv bytes that were not UTF-8 arrive as surrogates
        return False
    return True


def _fast_child_watcher() -> None:
    """Python 3.11 starts a thread per child process to wait for it; a pidfd watcher does it
    on the event loop instead (later Pythons do this themselves)."""
    if sys.version_info >= (3, 12) or not sys.platform.startswith("linux"):
        return
    import asyncio
    import contextlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with contextlib.suppress(AttributeError, OSError):
            asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


# command -> (module of tui.cli, its handler): a command imports only its own module.
_HANDLERS = {
    "open": ("open_app", "cmd_open"),
    "run": ("run", "cmd_run"),
    "validate": ("run", "cmd_validate"),
    "ls": ("inspect", "cmd_ls"),
    "logs": ("inspect", "cmd_logs"),
    "cancel": ("control", "cmd_control"),
    "retry": ("control", "cmd_control"),
    "approve": ("control", "cmd_control"),
    "ask": ("human", "cmd_ask"),
    "questions": ("human", "cmd_questions"),
    "answer": ("human", "cmd_answer"),
    "accept": ("human", "cmd_review"),
    "reject": ("human", "cmd_review"),
    "daemon": ("daemon_cmd", "cmd_daemon"),
    "web": ("web", "cmd_web"),
}


# Commands that build many objects at once (modules, a task file's tasks) and then run an
# engine: the collector's young passes over all of that were ~10% of `tui run`'s start-up.
# They hold the collector from their first import until the command settles it (tui.cli.run:
# the tasks loaded), and always before the handler returns.
_GC_TUNED = ("run", "validate")


async def _dispatch(args: argparse.Namespace) -> int:
    try:
        handler = getattr(args, "handler", None)
        if handler is None:
            import importlib

            module, name = _HANDLERS[args.command]
            handler = getattr(importlib.import_module(f"tui.cli.{module}"), name)
        return await handler(args)
    finally:
        if (common := sys.modules.get("tui.cli.common")) is not None:
            common.flush_transitions()  # lines still held for their batch


if __name__ == "__main__":
    sys.exit(main())
