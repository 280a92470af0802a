"""`tui diff | merge | discard | worktree | gc`: a worktree task's work (issue 15), through
the engine that owns the database (or the same handlers on the store)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tui.cli.common import open_store

_ID = "id, unique id prefix, or task name"


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    d = sub.add_parser("diff", parents=[db], help="a worktree task's changes against its base")
    d.add_argument("task", metavar="ID", help=_ID)
    d.add_argument("--stat", action="store_true", help="only the files, with +/- line counts")
    d.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the diff (auto: when printing to a terminal)",
    )
    d.set_defaults(handler=cmd_diff)
    m = sub.add_parser(
        "merge",
        parents=[db],
        help="merge a worktree task's branch into its base branch (fast-forward when possible)",
    )
    m.add_argument("task", metavar="ID", help=_ID)
    m.set_defaults(handler=cmd_merge)
    x = sub.add_parser(
        "discard", parents=[db], help="remove a worktree task's worktree and branch (asks first)"
    )
    x.add_argument("task", metavar="ID", help=_ID)
    x.add_argument("--yes", action="store_true", help="do not ask")
    x.set_defaults(handler=cmd_discard)
    w = sub.add_parser("worktree", parents=[db], help="print a task's worktree path")
    w.add_argument("task", metavar="ID", help=_ID)
    w.set_defaults(handler=cmd_worktree)
    g = sub.add_parser(
        "gc",
        parents=[db],
        help="remove worktrees of tasks that no longer exist (uncommitted changes are"
        " committed to their branch first)",
    )
    g.set_defaults(handler=cmd_gc)


async def _send(args: argparse.Namespace, make: Any) -> Any:
    from tui.daemon.lifecycle import connected
    from tui.engine import api  # noqa: F401

    async with open_store(args.db) as store:
        task_id = await store.resolve(args.task)
        async with connected(store) as client:
            return await client.send(make(task_id))


async def cmd_diff(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected  # noqa: F401 - on use, not at every start
    from tui.engine import api

    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    reply = await _send(args, lambda i: api.GetWorktree(task_id=i, diff=True, color=color))
    if args.stat:
        for path, added, removed in reply.files:
            counts = "binary" if added is None else f"+{added} -{removed}"
            print(f"{counts:>12}  {path}")
    else:
        sys.stdout.write(reply.diff)
    return 0


async def cmd_merge(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected  # noqa: F401 - on use, not at every start
    from tui.engine import api

    print((await _send(args, lambda i: api.Merge(task_id=i))).text)
    return 0


async def cmd_discard(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected
    from tui.engine import api

    async with open_store(args.db) as store:
        task_id = await store.resolve(args.task)
        async with connected(store) as client:
            wt = await client.send(api.GetWorktree(task_id=task_id))
            if not args.yes and not _confirmed(f"throw away branch {wt.branch} and {wt.path}"):
                return 1
            print((await client.send(api.Discard(task_id=task_id))).text)
    return 0


def _confirmed(what: str) -> bool:
    if not sys.stdin.isatty():
        print(f"tui: this would {what}; pass --yes to do it", file=sys.stderr)
        return False
    if input(f"{what[0].upper()}{what[1:]}? [y/N] ").strip().lower() not in ("y", "yes"):
        print("nothing discarded")
        return False
    return True


async def cmd_worktree(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected  # noqa: F401 - on use, not at every start
    from tui.engine import api

    wt = await _send(args, lambda i: api.GetWorktree(task_id=i))
    if wt.status in ("merged", "discarded"):
        print(f"tui: the task's worktree was {wt.status} (it was {wt.path})", file=sys.stderr)
        return 1
    print(wt.path)
    return 0


async def cmd_gc(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected
    from tui.engine import api

    async with open_store(args.db) as store, connected(store) as client:
        print((await client.send(api.CollectWorktrees())).text)
    return 0
