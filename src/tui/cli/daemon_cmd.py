"""`tui daemon start|stop|status`: the scheduler daemon that keeps runs going without the app."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tui.cli.common import (
    config_settings,
    db_path,
    engine_executor,
    err,
    given_settings,
    settings_notes,
)


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    d = sub.add_parser("daemon", help="start, stop or inspect the scheduler daemon")
    dsub = d.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    start = dsub.add_parser("start", parents=[db], help="start it in the background")
    start.add_argument(
        "--foreground", action="store_true", help="run it here (for systemd or a debugger)"
    )
    start.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="tasks at once, stored for the database (default: the stored value, else the "
        "config's, else 4)",
    )
    start.add_argument(
        "--shell",
        help="shell for shell tasks, stored for the database (default: the stored one, else "
        "the config's, else bash)",
    )
    stop = dsub.add_parser(
        "stop",
        parents=[db],
        help="stop it: running tasks are interrupted and run again (claude resuming its "
        "session) when the daemon next starts; asks first when tasks are running",
    )
    stop.add_argument("-y", "--yes", action="store_true", help="stop without asking")
    status = dsub.add_parser("status", parents=[db], help="pid, socket, uptime, running tasks")
    status.add_argument("--json", action="store_true")


async def cmd_daemon(args: argparse.Namespace) -> int:
    from tui.daemon import lifecycle
    from tui.daemon.paths import daemon_paths

    db = db_path(args.db)
    if args.daemon_command == "start":
        if args.foreground:
            from tui.daemon.service import DaemonRunning, serve

            try:
                executor = engine_executor(args)  # [executor] in the config
                return await serve(
                    daemon_paths(db),
                    given=given_settings(args),
                    fallback=config_settings(),
                    executor=executor,
                )
            except DaemonRunning as e:
                err(str(e))
                return 1
        running = await lifecycle.attach(db)
        if running is not None:
            await running.aclose()
            if running.foreground:
                err(
                    f"a `tui run` (pid {running.pid}) owns {db} in the foreground; "
                    "the daemon can start when it ends"
                )
                return 1
            print(f"tui daemon already running (pid {running.pid})")
            return 0
        for note in settings_notes(db, args):
            err(note)
        started = await lifecycle.ensure(db, concurrency=args.concurrency, shell=args.shell)
        try:
            info = await started.status()
        finally:
            await started.aclose()
        print(
            f"tui daemon started (pid {started.pid}, socket {started.paths.socket}; "
            f"concurrency {info.concurrency}, shell {info.shell})"
        )
        return 0
    if args.daemon_command == "stop":
        owner = await lifecycle.attach(db, any_version=True)
        ending: list[str] = []
        if owner is not None:
            try:
                busy, ending = ([], []) if owner.foreground else await _running_names(owner)
            finally:
                await owner.aclose()
            if owner.foreground:
                err(
                    f"no tui daemon runs {db}: a `tui run` or app (pid {owner.pid}) owns it "
                    "in the foreground; stop that one where it runs"
                )
                return 1
            if busy and not args.yes and not _confirmed(owner.pid, busy):
                return 1
        pid = await lifecycle.stop(db)
        if pid is None:
            print("no tui daemon running")
        else:
            print(f"tui daemon (pid {pid}) stopped")
        if ending:  # `tui ls` still shows them running: say why, and what ends them
            err(
                f"{_names(ending)}: ended, but the full disk refused to store the end; the "
                "next start (`tui daemon start`, `tui run`) stores it, and runs nothing again"
            )
        return 0
    remote = await lifecycle.attach(db, any_version=True)
    if remote is None:
        if args.json:
            print(json.dumps({"running": False, "db": str(db)}))
        else:
            print(f"no tui daemon running for {db}")
        return 3  # like `systemctl status`: not running
    try:
        status = {**(await remote.status()).model_dump(), "version": remote.version}
    finally:
        await remote.aclose()
    if args.json:
        print(json.dumps({"running": True, **status}))
        return 0
    print(_human(status))
    return 0


async def _running_names(owner: Any) -> tuple[list[str], list[str]]:
    """The names of the tasks a stop would interrupt ([] when it cannot say: stop it anyway),
    and of those whose agent has exited and whose end waits for room on a full disk: the next
    start stores their end, and runs nothing again."""
    try:
        running = (await owner.status()).model_dump()["running_tasks"]
    except Exception:  # a daemon that cannot answer (its database gone, say) is still stopped
        return [], []
    return [r["name"] for r in running if not r["ending"]], [
        r["name"] for r in running if r["ending"]
    ]


def _names(names: list[str]) -> str:
    return ", ".join(names[:5]) + (" …" if len(names) > 5 else "")


def _confirmed(pid: int, running: list[str]) -> bool:
    names = _names(running)
    what = (
        f"{len(running)} task(s) running in the tui daemon (pid {pid}): {names}. Stopping "
        "interrupts them; they run again (claude resuming its session) when the daemon next "
        "starts."
    )
    if not sys.stdin.isatty():
        err(f"{what} Pass --yes to stop it anyway.")
        return False
    answer = input(f"{what} Stop it? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        print("not stopped")
        return False
    return True


def _human(s: dict[str, Any]) -> str:
    running = s["running_tasks"]
    names = ", ".join(
        r["name"] + (" (ended; its end waits for room on a full disk)" if r["ending"] else "")
        for r in running[:5]
    ) + (" …" if len(running) > 5 else "")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["started_at"]))
    who = "tui (foreground `tui run` or app)" if s.get("foreground") else "tui daemon"
    return "\n".join(
        [
            f"{who}: running (pid {s['pid']}), up {_duration(s['uptime'])} since {started}",
            f"  version:  tui {s['version'] or '(older than version reporting)'}",
            f"  database: {s['db']}",
            f"  socket:   {s['socket']}",
            f"  log:      {s['log']}",
            f"  tasks:    {s['tasks']}, {len(running)} running" + (f": {names}" if names else ""),
            f"  viewers:  {s['viewers']}",
            f"  settings: concurrency {s['concurrency']}, shell {s['shell']}"
            " (stored for the database: a restart keeps them)",
        ]
    )


def _duration(seconds: float) -> str:
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"
