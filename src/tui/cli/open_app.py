"""`tui` / `tui open [FILE...]`: submit the files' tasks, then open the app."""

from __future__ import annotations

import argparse
import os
import sys

from tui.cli.common import err, open_store
from tui.engine.client import live_engine_pid
from tui.model.loader import load_task_files

SSH_FPS = 20  # default frame cap over SSH (bench: 1.3x the bytes of tail -f, 1.4x at 60)


async def cmd_open(args: argparse.Namespace) -> int:
    # Fewer frames mean fewer bytes over a remote link; TEXTUAL_FPS is read at import time.
    fps = args.fps or (SSH_FPS if os.environ.get("SSH_CONNECTION") else None)
    if fps:
        os.environ["TEXTUAL_FPS"] = str(fps)
    async with open_store(args.db) as store:
        pid = await live_engine_pid(store)
        if pid is not None:
            err(
                f"a `tui run` (pid {pid}) is scheduling {store.path}; watch it with "
                "`tui ls` / `tui logs -f` until the daemon lets the app attach to it"
            )
            return 1
        tasks = []
        if args.files:
            result = load_task_files(args.files, known_ids=await store.all_ids())
            for w in result.warnings:
                print(f"warning: {w}", file=sys.stderr)
            tasks = result.tasks
        from tui.app.run_app import run_app

        await run_app(
            store, tasks, concurrency=args.concurrency, mouse=not args.no_mouse, shell=args.shell
        )
    return 0
