"""`tui export RUN|--all FILE` and `tui import FILE`: a run as one portable JSON-lines file
(tui.store.portable says what is in it and how import keys it)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    exp = sub.add_parser(
        "export",
        parents=[db],
        help="write a run (a task and every task connected to it) or --all as a JSON-lines file",
    )
    exp.add_argument("what", nargs="+", metavar="RUN FILE", help="task id, prefix or name; file")
    exp.add_argument("--all", action="store_true", help="every task of the database")
    exp.set_defaults(handler=cmd_export)
    imp = sub.add_parser(
        "import", parents=[db], help="add an exported file's tasks to the database"
    )
    imp.add_argument("file", metavar="FILE")
    imp.set_defaults(handler=cmd_import)


async def cmd_export(args: argparse.Namespace) -> int:
    from tui.cli.export_run import cmd_export as run

    return await run(args)


async def cmd_import(args: argparse.Namespace) -> int:
    from tui.cli.export_run import cmd_import as run

    return await run(args)
