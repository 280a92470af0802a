"""`tui export RUN|--all FILE` and `tui import FILE`: a run as one portable JSON-lines file
(tui.store.portable says what is in it and how import keys it)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from tui.cli.common import db_path, open_store
from tui.engine.scheduler import live_engine_pid
from tui.store.db import StoreError
from tui.store.portable import KINDS, PortableError, import_records, read_records, select_ids
from tui.store.portable import write_export as _write_export


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


def _counts(counts: dict[str, int]) -> str:
    names = {"task": "tasks", "run": "runs", "event": "events", "output": "output chunks"}
    return ", ".join(f"{counts[k]} {names[k]}" for k in KINDS if k in names)


async def cmd_export(args: argparse.Namespace) -> int:
    want = 1 if args.all else 2
    if len(args.what) != want:
        usage = "tui export --all FILE" if args.all else "tui export RUN FILE (or --all FILE)"
        print(f"tui: usage: {usage}", file=sys.stderr)
        return 2
    target = Path(args.what[-1])
    async with open_store(args.db, create=False) as store:
        root = None if args.all else [await store.resolve(args.what[0])]
    path = db_path(args.db)
    counts = await asyncio.to_thread(_export, path, root, target, args.what[0])
    print(f"exported {_counts(counts)} to {target}")
    return 0


def _export(path: Path, roots: list[str] | None, target: Path, selection: str) -> dict[str, int]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30, isolation_level=None)
    try:
        ids = select_ids(db, roots)
        # Written beside the target and renamed: a reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                counts = _write_export(db, ids, out, "all" if roots is None else selection)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return counts
    except OSError as e:
        raise StoreError(f"cannot write {target}: {e.strerror or e}") from None
    finally:
        db.close()


async def cmd_import(args: argparse.Namespace) -> int:
    src = Path(args.file)
    try:
        handle = src.open("rb")
    except OSError as e:
        print(f"tui: cannot read {src}: {e.strerror or e}", file=sys.stderr)
        return 1
    with handle:
        async with open_store(args.db) as store:  # created and brought to the current schema
            pid = await live_engine_pid(store)
        if pid is not None:
            print(
                f"tui: the database {db_path(args.db)} is in use by the engine with pid {pid}: "
                "stop it first (`tui daemon stop`), then import",
                file=sys.stderr,
            )
            return 1
        try:
            counts = await asyncio.to_thread(_import, db_path(args.db), handle, str(src))
        except PortableError as e:
            print(f"tui: {e}", file=sys.stderr)
            return 1
    print(f"imported {_counts(counts)} from {src}")
    return 0


def _import(path: Path, handle: Any, name: str) -> dict[str, int]:
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:

        def warn(text: str) -> None:
            print(f"warning: {text}", file=sys.stderr)

        return import_records(db, read_records(handle, name), name, warn)
    finally:
        db.close()
