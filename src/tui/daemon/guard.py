"""The daemon's dead-man's switch: a small process that stops the daemon's agents the moment
the daemon dies (kill -9, a crash), rather than when the next daemon starts.

Until the next start recovers them, the agents of a dead daemon run on with nobody to record
how they end: a script that finishes its work (pushes, writes, sends) meanwhile is run again
by the next daemon, which cannot know it finished (bench/chaos.py counted 15 side effects run
twice in 50 kill rounds this way). The guard holds the read end of a pipe only the daemon
writes to (the pid of each agent it starts: the leader of the agent's process group); when the
daemon is gone the pipe reaches EOF, and the guard kills those groups at once, then the group
of every other process carrying this daemon's marker (``TUI_ENGINE_ID``, see
``tui.engine.recovery``). A daemon that stops normally (it stops its runs itself) says
``stop`` first and the guard leaves. The next daemon's recovery still ends the runs as
interrupted; the guard only shortens how long they run unwatched.

Agents the daemon's keeper started are the keeper's business while it lives: it kills those
that cannot be adopted itself, and keeps the others (plain commands) running for the next
daemon to adopt (tui.engine.adoption). The guard spares every group whose leader is a child of
a living keeper, waits for those keepers to exit (they do once their agents are handed on and
done, or after their bounded wait), and then kills whatever of the daemon's is left.

Run as ``python -m tui.daemon.guard NAME=VALUE`` (the marker as it appears in a process's
environment); it imports nothing of tui, so it costs a bare interpreter.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

STOP = b"stop\n"
PRUNE_AT = 1000  # groups remembered before the ended ones are dropped


def marked_groups(marker: bytes) -> set[int]:
    """Process groups of live processes whose environment holds ``marker`` (NAME=VALUE)."""
    groups = set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            pgid = os.getpgid(int(name))
        except OSError:  # gone, or not ours to read
            continue
        if marker in environ.split(b"\0"):
            groups.add(pgid)
    return groups


def _marked(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def keeper_of(pid: int) -> int | None:
    """The pid of the keeper (tui.procs.keeper) whose child ``pid`` is, if it is one."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
        ppid = int(raw[raw.rfind(b")") + 1 :].split()[1])
        argv = Path(f"/proc/{ppid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    return ppid if any(a.endswith(b"/procs/keeper.py") for a in argv) else None


def kill_marked(marker: bytes, known: Collection[int] = (), spare: Collection[int] = ()) -> int:
    """SIGKILL every group marked ``marker`` but those in ``spare``: first the groups the
    daemon reported (a few reads: at once), then any other a scan of /proc finds, again for
    any that forked."""
    killed = 0
    for pgid in known:
        if pgid not in spare and _marked(pgid, marker):  # still the daemon's (not reused)
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
                killed += 1
    for _ in range(3):
        groups = marked_groups(marker) - {os.getpgrp(), *spare}
        if not groups:
            break
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "=" not in argv[0]:
        print("usage: python -m tui.daemon.guard NAME=VALUE", file=sys.stderr)
        return 2
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # only the pipe says when to act
    marker = argv[0].encode()
    known: set[int] = set()  # process groups the daemon started (its agents' pids)
    pending = b""
    while chunk := os.read(0, 4096):  # EOF: the daemon is gone
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line == STOP.strip():
                return 0
            if line.isdigit():
                known.add(int(line))
        if len(known) > PRUNE_AT:  # forget groups that have ended
            known = {p for p in known if os.path.exists(f"/proc/{p}")}
    # Groups led by a living keeper's child: that keeper decides (see the module docstring).
    kept = {}
    for pgid in known | marked_groups(marker):
        keeper = keeper_of(pgid)
        if keeper is not None:
            kept[pgid] = keeper
    n = kill_marked(marker, known, kept)
    print(f"tui guard: the daemon died; stopped {n} process group(s) of its runs", flush=True)
    if kept:
        _wait_exit(set(kept.values()))
        n = kill_marked(marker, kept)
        print(f"tui guard: its keeper is gone; stopped {n} more process group(s)", flush=True)
    return 0


def _wait_exit(pids: set[int]) -> None:
    """Until every one of ``pids`` has exited."""
    fds = []
    for pid in pids:
        with contextlib.suppress(OSError):
            fds.append(os.pidfd_open(pid))
    for fd in fds:
        select.select([fd], [], [])
        os.close(fd)


class Guard:
    """The daemon's side: start the guard for ``marker``; ``stop()`` when stopping normally."""

    def __init__(self, marker: str, log: int) -> None:
        read, self._write = os.pipe2(os.O_CLOEXEC)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tui.daemon.guard", marker],
                stdin=read,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a signal to the daemon's group does not reach it
                close_fds=True,
            )
        finally:
            os.close(read)
        os.set_blocking(self._write, False)  # never hold up the daemon's loop

    def spawned(self, pgid: int) -> None:
        """The daemon started an agent in group ``pgid`` (killed first if the daemon dies)."""
        with contextlib.suppress(OSError):  # a full pipe: the guard's scan finds it anyway
            os.write(self._write, b"%d\n" % pgid)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._write, STOP)
        os.close(self._write)
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
