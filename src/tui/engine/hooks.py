"""Hooks: commands run when a task's state changes (``hooks:`` of the task, its file, config).

Each state change the store commits (the journal, in commit order) picks at most one hook:
``on_start`` (QUEUED → RUNNING), ``on_complete`` (→ COMPLETED), ``on_skip`` (→ SKIPPED),
``on_error`` (→ FAILED, TIMED_OUT, BUDGET_EXCEEDED: an attempt failed, retry or not) and
``on_progress`` (any other change: queued, waiting on a person, resumed, cancelled).

A hook is an argv, never a shell string: task data reaches it only as the task's JSON on
stdin and ``TUI_*`` environment variables. It runs in its own process group, which is ended
when it exits or when its timeout passes; an engine that stops waits for its running hooks.
It never changes the task's state: its outcome is a ``hook`` row in the task's journal (and
the daemon log when it fails).
Hooks run at most once per change: a change whose hook had not finished when the engine died
is not hooked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
from collections.abc import Callable
from subprocess import PIPE

from tui.model.states import State
from tui.model.workflow import Hooks
from tui.procs.groups import terminate_group
from tui.procs.process import Child, spawn
from tui.store.db import Store
from tui.store.records import EventRecord, TaskRecord

log = logging.getLogger(__name__)

TIMEOUT_EXIT = 124  # coreutils `timeout`: the command timed out
HOOK_OUTPUT = 4096  # bytes of a hook's stderr kept in the journal when it fails
_ERRORS = {State.FAILED, State.TIMED_OUT, State.BUDGET_EXCEEDED}


def hook_event(frm: str | None, to: str) -> str:
    if to == State.RUNNING and frm == State.QUEUED:
        return "on_start"
    if to == State.COMPLETED:
        return "on_complete"
    if to == State.SKIPPED:
        return "on_skip"
    if to in _ERRORS:
        return "on_error"
    return "on_progress"


class HookRunner:
    def __init__(
        self,
        store: Store,
        lookup: Callable[[str], TaskRecord | None],
        defaults: Hooks | None = None,
        kill_grace: float = 2.0,
    ) -> None:
        self.store = store
        self.lookup = lookup
        self.defaults = defaults
        self.kill_grace = kill_grace
        self._running: set[asyncio.Task[None]] = set()
        self._timeout_bin = shutil.which("timeout")

    def hooks_of(self, rec: TaskRecord) -> Hooks | None:
        own = rec.task.hooks
        if own is None:
            return self.defaults
        return own.merged_over(self.defaults)

    def on_event(self, ev: EventRecord) -> None:
        """A journal row was committed: start the hook it calls for, if any."""
        if ev.kind != "state" or ev.to_state is None:
            return
        rec = self.lookup(ev.task_id)
        if rec is None:
            return
        hooks = self.hooks_of(rec)
        if hooks is None:
            return
        event = hook_event(ev.from_state, ev.to_state)
        argv = getattr(hooks, event)
        if not argv:
            return
        env = {
            **os.environ,
            "TUI_HOOK": event,
            "TUI_TASK_ID": rec.id,
            "TUI_TASK_NAME": rec.name,
            "TUI_TASK_STATE": ev.to_state,
            "TUI_PREVIOUS_STATE": ev.from_state or "",
            "TUI_REASON": ev.reason,
            "TUI_DB": str(self.store.path),
        }
        job = asyncio.create_task(
            self._run(ev, event, list(argv), env, hooks.timeout),
            name=f"hook-{event}-{rec.name}",
        )
        self._running.add(job)
        job.add_done_callback(self._running.discard)

    async def _run(
        self,
        ev: EventRecord,
        event: str,
        argv: list[str],
        env: dict[str, str],
        timeout: float,
    ) -> None:
        task_id = ev.task_id
        # Read as committed (the engine's copy may not have the move's result yet); the
        # state is the one this change made, whatever happened since.
        rec = await self.store.get_task(task_id)
        if rec is None:
            return
        task = {
            **rec.to_json(),
            "state": ev.to_state,
            "reason": ev.reason,
            "previous_state": ev.from_state,
            "hook": event,
        }
        stdin = json.dumps(task).encode() + b"\n"  # one line: a log of them is JSON lines
        outcome: dict[str, object] = {"hook": event, "argv": argv}
        program = shutil.which(argv[0], path=env.get("PATH"))
        try:
            if program is None:
                raise FileNotFoundError(errno.ENOENT, "not found, or not executable")
            proc = await spawn(self._bounded(argv, timeout), cwd=None, env=env, stdin=PIPE)
        except OSError as e:
            outcome |= {"ok": False, "error": f"cannot start {argv[0]}: {e.strerror or e}"}
        else:
            try:
                outcome |= await self._wait(proc, stdin, timeout)
            finally:
                # Whatever the hook left running in its group ends with it.
                await terminate_group(proc.pid, grace=self.kill_grace, proc=proc)
                proc.close_pipes()
        if not outcome.get("ok"):
            log.warning("hook %s of task %s failed: %s", event, task_id, outcome.get("error"))
        with contextlib.suppress(Exception):  # a closed store (engine stopping): log only
            await self.store.add_event(task_id, "hook", outcome)

    def _bounded(self, argv: list[str], timeout: float) -> list[str]:
        """``argv`` under coreutils' ``timeout``, which ends the hook's whole group after
        ``timeout`` even when this engine was killed (-9) meanwhile: nothing a hook starts
        outlives its bound. Without ``timeout`` on PATH, the engine alone bounds it."""
        if self._timeout_bin is None:
            return argv
        grace = f"{self.kill_grace:g}s"
        return [self._timeout_bin, "-k", grace, f"{timeout:g}s", *argv]

    async def _wait(self, proc: Child, stdin: bytes, timeout: float) -> dict[str, object]:
        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
                proc.stdin.close()

        async def drain() -> bytes:
            kept = b""
            while chunk := await proc.stderr.read(65536):
                kept = (kept + chunk)[-HOOK_OUTPUT:]
            return kept

        async def discard() -> None:
            while await proc.stdout.read(65536):
                pass

        work = asyncio.gather(feed(), discard(), drain(), proc.wait())
        timed_out = {"ok": False, "error": f"timed out after {timeout:g}s"}
        try:
            # A margin past `timeout`'s own bound: it acts first and ends the whole group.
            async with asyncio.timeout(timeout + self.kill_grace + 1):  # not wait_for (ruff)
                _, _, err, code = await work
        except TimeoutError:
            return timed_out
        if self._timeout_bin is not None and code in (TIMEOUT_EXIT, -signal.SIGKILL, 137):
            return timed_out
        text = err.decode("utf-8", "replace").strip()
        if code != 0:
            return {"ok": False, "exit_code": code, "error": f"exit code {code}", "stderr": text}
        return {"ok": True, "exit_code": 0}

    async def stop(self) -> None:
        """Let running hooks finish: each is bounded by its own timeout, after which its
        group is ended (so `tui run` does not exit before the last task's hook ran)."""
        while self._running:
            await asyncio.gather(*set(self._running), return_exceptions=True)
