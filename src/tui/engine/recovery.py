"""What an engine that died (kill -9, power loss) left behind, put right before scheduling.

Its runs are still open in the store. A run row is committed before its process is spawned,
but the process's pid is stored only after the spawn (the loop does not wait for it). So the
processes of an open run are found two ways: by the identity stored in the row, and by the
marker every process of a run carries in its environment (``TUI_ENGINE_ID`` and
``TUI_RUN_ID``, inherited by its children): a kill -9 between the spawn and the pid's commit
leaves a process only the marker finds. Their process groups are killed, then the runs are
ended as interrupted — but for those whose agent had exited and whose end was recorded
(tui.engine.end_log): the engine finishes those as they ended. What happens to their tasks is
the engine's business (``Engine._recover``). See docs/daemon.md, "Crash safety".
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterable, Mapping

from tui.engine.runner import ENV_ENGINE_ID, ENV_RUN_ID
from tui.procs.groups import kill_orphan_group
from tui.procs.process import ProcIdentity, identity_alive, proc_start_time
from tui.store.db import Store

_KILL_WAIT = 5.0  # seconds to wait for killed processes to be gone (SIGKILL: not long)


async def end_orphaned_runs(
    store: Store, ended: Collection[int] = (), adopted: Mapping[int, int] = {}
) -> list[int]:
    """Kill the processes of every open run and end it as interrupted, but for the runs in
    ``ended`` (their agents had exited: tui.engine.end_log), left open for the engine to
    finish, and those in ``adopted`` (run id → the process group of its agent, carried on:
    tui.engine.adoption; 0 when it has ended), left open and that group spared — not what
    else the run left (a validator, say): that is killed as for any run. Returns the runs of
    ``ended`` that are open."""
    found = await store.runs(open_only=True)
    if not found:
        return []
    runs = [run for run in found if run.id not in adopted]
    for run in runs:
        if run.pid and run.pgid:
            kill_orphan_group(ProcIdentity(run.pid, run.pgid, run.proc_start or -1))
    kill_marked({(run.engine_id, run.id) for run in found}, set(adopted.values()) - {0})
    for run in runs:
        if run.id not in ended:
            await store.end_run(run.id, outcome="interrupted", error="interrupted")
    return [run.id for run in runs if run.id in ended]


def run_marker(environ: bytes) -> tuple[str, int] | None:
    """(engine id, run id) from a process's /proc/PID/environ, if it belongs to a run."""
    engine = run = None
    for item in environ.split(b"\0"):
        if item.startswith(ENV_ENGINE_ID.encode() + b"="):
            engine = item.split(b"=", 1)[1].decode(errors="replace")
        elif item.startswith(ENV_RUN_ID.encode() + b"="):
            with contextlib.suppress(ValueError):
                run = int(item.split(b"=", 1)[1])
    return (engine, run) if engine and run is not None else None


def marked_processes(runs: set[tuple[str, int]]) -> list[ProcIdentity]:
    """Live processes (ours to read) whose environment marks them as one of ``runs``."""
    own = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == own:
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
            pgid = os.getpgid(pid)
        except OSError:  # gone, or another user's
            continue
        if run_marker(environ) in runs:
            start = proc_start_time(pid)
            if start is not None:
                out.append(ProcIdentity(pid, pgid, start))
    return out


def kill_marked(runs: set[tuple[str, int]], spare: Collection[int] = ()) -> None:
    """SIGKILL the process group of every process marked as one of ``runs`` (but the groups
    in ``spare``); wait until they are gone (a retry must not start while the old attempt
    still writes)."""
    found = [p for p in marked_processes(runs) if p.pgid not in spare]
    own_group = os.getpgrp()
    for p in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if p.pgid > 1 and p.pgid != own_group:
                os.killpg(p.pgid, signal.SIGKILL)
            else:  # not in a group of its own: only the process itself
                os.kill(p.pid, signal.SIGKILL)
    _wait_gone(found)


def _wait_gone(procs: Iterable[ProcIdentity]) -> None:
    deadline = time.monotonic() + _KILL_WAIT
    left = [p for p in procs if identity_alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.01)  # another process's death: nothing to wait on but /proc
        left = [p for p in left if identity_alive(p)]
