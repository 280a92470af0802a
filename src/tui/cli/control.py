"""`tui cancel | retry | approve ID`: through the engine that owns the database, else on the
store through the same handlers."""

from __future__ import annotations

import argparse

from tui.cli.common import open_store
from tui.daemon.lifecycle import connected


async def cmd_control(args: argparse.Namespace) -> int:
    async with open_store(args.db) as store:
        task_id = await store.resolve(args.task)
        async with connected(store) as client:
            reply = await getattr(client, args.command)(task_id)
    print(reply)
    return 0
