"""`tui send ID TEXT` (to a running claude task) and `tui continue ID TEXT` (a finished
claude, codex or gemini task resumes its session with TEXT): engine commands."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import open_store


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "send", parents=[db], help="send a running claude task a message (a new user turn)"
    )
    s.add_argument("task", metavar="ID", help="id, unique id prefix, or task name")
    s.add_argument("text", metavar="TEXT")
    s.set_defaults(handler=cmd_talk)
    c = sub.add_parser(
        "continue",
        parents=[db],
        help="resume a finished claude, codex or gemini task's session with a message",
    )
    c.add_argument("task", metavar="ID", help="id, unique id prefix, or task name")
    c.add_argument("text", metavar="TEXT")
    c.set_defaults(handler=cmd_talk)


async def cmd_talk(args: argparse.Namespace) -> int:
    from tui.daemon.lifecycle import connected
    from tui.engine import api

    message = api.Send if args.command == "send" else api.Continue
    async with open_store(args.db) as store:
        task_id = await store.resolve(args.task)
        async with connected(store) as client:
            print((await client.send(message(task_id=task_id, text=args.text))).text)
    return 0
