"""One run of one task: start it, watch its timeout, kill it, say how it ended.

``Executor`` is the seam between the engine and whatever carries a run out. ``LocalExecutor``
runs the task's agent adapter as a local process group; a second executor (a cluster, Ray)
implements the same two methods. The engine owns everything durable around a run — the run row,
the task's state, output, questions — and reaches the run only through ``Run`` and ``RunHost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tui.engine.adapter import Adapter, AdapterError, RunResult, adoptive
from tui.engine.output import LineCounter
from tui.model.duration import format_duration
from tui.model.states import State
from tui.model.task import Task
from tui.procs.groups import terminate_group
from tui.procs.keeper_client import Keeper, KeeperLost, NotStarted
from tui.procs.kept_child import KeptChild
from tui.procs.process import Child, Spawner, spawn
from tui.procs.run_env import RunEnv
from tui.store.records import QuestionRecord, RunRecord, RunStart, TaskRecord

log = logging.getLogger(__name__)

# Environment names a run's processes carry. TUI_ENGINE_ID and TUI_RUN_ID together mark every
# process of a run (children inherit them): recovery finds by them a run whose pid it never
# learnt (see docs/daemon.md, "Crash safety").
ENV_RUN_ID = "TUI_RUN_ID"
ENV_ENGINE_ID = "TUI_ENGINE_ID"
ENV_KEEPER = "TUI_KEEPER"  # "0": agents are started in the engine's process, not by a keeper


@dataclass(eq=False)
class Run(LineCounter):
    """One attempt under way, as the engine and its executor share it."""

    attempt: int = 1
    proc: Child | None = None
    recorded: asyncio.Future[None] | None = None  # the process stored in its run row
    # "timeout" | "cancel" | "shutdown" | "disk_full" | "lost" (the executor lost the worker
    # that ran it: a Ray node died) | "unstarted" (sent ahead, no slot came free in time:
    # nothing of it ran). The last three are interrupted attempts, not counted.
    kill_reason: str = ""
    kill_error: str = ""  # why, for "disk_full" (and a "cancel" not by the user)
    # Who holds the run's end until it is stored, for a next engine: "log" (the end log),
    # "keeper" (its keeper keeps exit and output), "" (nobody: it would be run again).
    end_held: str = ""
    # Its agent has exited and its end waits for room on a full disk: a stop interrupts
    # nothing of it (the next engine finishes it, tui.engine.run_end).
    waiting_room: bool = False
    runner: asyncio.Task[None] | None = None  # the engine's task carrying the run to its end
    began: float = 0.0  # time.monotonic() as its agent was reported started (0: not yet)
    may_wait: bool = False  # its agent's start may wait for a slot (tui.engine.dispatch)
    open_questions: set[str] = field(default_factory=set)
    _inbox: asyncio.Queue[tuple[str, asyncio.Future[bool]]] | None = field(default=None, repr=False)
    # The timeout's clock (``working``/``waiting``), made when first asked for: only a run
    # with a timeout watches it, and two asyncio.Events a run cost ~12 calls.
    _clock: tuple[asyncio.Event, asyncio.Event] | None = field(default=None, repr=False)
    _paused: bool = field(default=False, repr=False)

    @property
    def working(self) -> asyncio.Event:
        """Set while the agent works: the timeout counts only then, not while it waits on
        a person. Exactly one of ``working`` and ``waiting`` is set at any time."""
        return self._events()[0]

    @property
    def waiting(self) -> asyncio.Event:
        return self._events()[1]

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._clock is None:
            working, waiting = asyncio.Event(), asyncio.Event()
            (waiting if self._paused else working).set()
            self._clock = working, waiting
        return self._clock

    @property
    def inbox(self) -> asyncio.Queue[tuple[str, asyncio.Future[bool]]]:
        """A person's messages for the agent while it runs (`tui send`): the text, and a
        future the adapter sets to whether it reached the agent. Made when first asked for
        (an asyncio.Queue is ~10 calls, and most runs are never sent anything)."""
        if self._inbox is None:
            self._inbox = asyncio.Queue()
        return self._inbox

    @property
    def interrupted(self) -> bool:
        """Ended by the engine's side (stopping, or a worker lost), not by the task."""
        return self.kill_reason in ("shutdown", "lost", "unstarted")

    def pause_clock(self) -> None:
        """A person was asked: the timeout stops counting."""
        self._paused = True
        if self._clock is not None:
            self._clock[0].clear()
            self._clock[1].set()

    def resume_clock(self) -> None:
        self._paused = False
        if self._clock is not None:
            self._clock[1].clear()
            self._clock[0].set()


class RunHost(Protocol):
    """What a run needs from the engine that owns it."""

    @property
    def shell(self) -> str: ...
    @property
    def engine_id(self) -> str: ...
    @property
    def db_path(self) -> str: ...
    @property
    def concurrency(self) -> int: ...

    async def output_lines(
        self, run: Run, stream: int, lines: list[str], end: int | None = None
    ) -> None: ...
    async def ask_person(
        self, run: Run, kind: str, payload: dict[str, Any]
    ) -> dict[str, Any] | None: ...
    async def session_started(self, run: Run, session_id: str) -> None: ...
    def process_started(self, run: Run, proc: Child) -> None: ...
    async def node_started(self, run: Run, node: str) -> None: ...


class Executor(Protocol):
    """Carries runs out. The engine calls ``run`` once per attempt (in its own asyncio task)
    and ``kill`` to end one early, with ``run.kill_reason`` set to why."""

    async def run(self, run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> RunResult:
        """The attempt to its end. Never raises: a failure is a FAILED result."""
        ...

    async def kill(self, run: Run) -> None: ...

    async def close(self) -> None:
        """The engine stops: let go of what the executor holds (no run is left)."""
        ...


def run_markers(run: Run, rec: TaskRecord, host: RunHost) -> dict[str, str]:
    """The variables every process of a run gets from tui (whichever executor runs it)."""
    env = {
        "TUI_TASK_ID": rec.id,
        ENV_RUN_ID: str(run.run_id),
        ENV_ENGINE_ID: host.engine_id,
        "TUI_ATTEMPT": str(run.attempt),
        "TUI_DB": host.db_path,
    }
    if rec.rejection_comment:
        env["TUI_REJECTION_COMMENT"] = rec.rejection_comment
    return env


def late_answers(began: RunStart) -> list[QuestionRecord]:
    """Answers that arrived after the run that asked had ended: this run resumes with them."""
    if not began.questions:  # the usual case: nothing was ever asked
        return []
    last_end = max((r.ended_at or 0 for r in began.previous_runs), default=0)
    return [
        q
        for q in began.questions
        if q.status == "answered" and q.kind != "review" and (q.answered_at or 0) > last_end
    ]


# Where this tui's own scripts are, appended to every run's PATH (made once, not per run).
_TUI_BIN = os.pathsep + os.path.dirname(sys.executable)

_environ_seen: tuple[dict[bytes, bytes], dict[str, str]] | None = None


def environ() -> dict[str, str]:
    """A copy of ``os.environ``. Decoding every variable again for every run cost ~0.1 ms a
    task; the decoded copy is reused while the process's environment stays the same."""
    return dict(_environ())


def _environ() -> Mapping[str, str]:
    """``os.environ`` decoded, shared: not to be changed (a run's env is a merge of it)."""
    global _environ_seen
    raw = getattr(os.environ, "_data", None)  # CPython: the encoded variables, a plain dict
    if not isinstance(raw, dict):
        return os.environ
    if _environ_seen is None or _environ_seen[0] != raw:
        _environ_seen = (dict(raw), dict(os.environ))
    return _environ_seen[1]


class RunCtx:
    """The ``RunContext`` handed to adapters: the task, its history, and the host's services."""

    def __init__(
        self, host: RunHost, run: Run, rec: TaskRecord, began: RunStart, spawner: Spawner
    ) -> None:
        self._host = host
        self.spawner = spawner
        self._run = run
        self.task = task = rec.task
        self.run_id = run.run_id
        self.attempt = run.attempt
        self.shell = host.shell
        self.rejection_comment = rec.rejection_comment
        # `tui ask` inside the task must find this tui even when its venv is not on PATH.
        base = _environ()  # merged into a new dict below: no copy of its own
        path = base.get("PATH", os.defpath)
        # A dict that knows it is the base and these (tui.procs.run_env): the keeper is told
        # only these, the shell's plain-command check looks at these and the base once.
        self.env: dict[str, str] = RunEnv(
            base, {**task.agent.env, "PATH": path + _TUI_BIN, **run_markers(run, rec, host)}
        )
        self.cost_so_far = rec.cost_usd
        self.previous_runs: list[RunRecord] = began.previous_runs
        # Most runs were never asked anything: no call to find that out.
        self.late_answers: list[QuestionRecord] = late_answers(began) if began.questions else []
        self._session_id = ""

    @property
    def inbox(self) -> asyncio.Queue[tuple[str, asyncio.Future[bool]]]:
        return self._run.inbox

    async def output(self, stream: int, lines: list[str], end: int | None = None) -> None:
        await self._host.output_lines(self._run, stream, lines, end)

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Put the task in READY until a person answers; None if the question expired."""
        return await self._host.ask_person(self._run, kind, payload)

    async def session_started(self, session_id: str) -> None:
        if session_id and session_id != self._session_id:
            self._session_id = session_id
            await self._host.session_started(self._run, session_id)

    async def process_started(self, proc: Child) -> None:
        self._run.proc = proc
        self._run.began = time.monotonic()
        if isinstance(proc, KeptChild):  # it keeps the run's output until it is stored
            self._run.ack = proc.ack
        self._host.process_started(self._run, proc)


class LocalExecutor:
    """Runs each attempt through its agent type's adapter, as a local process group."""

    def __init__(self, adapters: Mapping[str, Adapter], kill_grace: float = 5.0) -> None:
        self.adapters = adapters
        self.kill_grace = kill_grace
        # Starts, reads and reaps the agents on the other core (tui.procs.keeper); TUI_KEEPER=0
        # starts them in this process instead (to compare, or where a keeper cannot run).
        self.keeper: Keeper | None = None if os.environ.get(ENV_KEEPER) == "0" else Keeper()
        self.spawner: Spawner = self.keeper.spawn if self.keeper is not None else spawn
        # Keepers of dead engines this one adopted runs from (tui.engine.adoption).
        self.attached: list[Keeper] = []

    def prepare(self, engine_id: str = "") -> None:
        """The engine starts: so does the keeper, while the engine gets ready."""
        if self.keeper is not None:
            self.keeper.start(engine_id)

    async def run(self, run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> RunResult:
        task = rec.task  # a property of the record: read once
        watchdog = None
        if task.timeout > 0:
            watchdog = asyncio.create_task(watch_timeout(run, task.timeout, self.kill))
        adapter = self.adapters.get(task.agent.type)
        try:
            if adapter is None:
                return RunResult(
                    State.FAILED,
                    error=f"agent type {task.agent.type!r} is not supported by this tui yet",
                )
            spawner = self.spawner
            keeper = self.keeper
            if keeper is not None:
                adoptable = self._adoptable(task)
                if adoptable and not keeper.set_up:  # told once (three calls a run saved)
                    # Its agent outlives this engine if it dies: the next one carries it on.
                    keeper.setup(host.engine_id, host.db_path)
                spawner = _Counted(keeper, run, host.concurrency, adoptable)
            result = await adapter.run(RunCtx(host, run, rec, began, spawner))
            if isinstance(run.proc, KeptChild) and run.proc.lost:
                return self._lost(run)
            return result
        except KeeperLost:
            return self._lost(run)
        except NotStarted:
            run.kill_reason = run.kill_reason or "unstarted"  # a cancel meanwhile stays one
            return RunResult(State.FAILED, error="not started: no slot came free in time")
        except AdapterError as e:
            return RunResult(State.FAILED, error=str(e))
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        except Exception as e:  # an adapter bug must not take the scheduler down
            log.exception("adapter %s crashed", rec.task.agent.type)
            return RunResult(State.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        finally:
            if watchdog:
                watchdog.cancel()
            proc = run.proc
            if proc is not None and proc.returncode is None:
                # Adapters end their group themselves (cli_process.follow does on every path,
                # cancellation included); this is for a process an adapter left unreaped.
                await terminate_group(proc.pid, grace=0.5, proc=proc)

    async def adopt(
        self,
        run: Run,
        rec: TaskRecord,
        host: RunHost,
        proc: Child,
        offsets: tuple[int, int],
        tail: list[str],
        elapsed: float,
    ) -> RunResult:
        """Carry on a run a dead engine started (tui.engine.adoption), ``elapsed`` seconds of
        its timeout already gone; as ``run`` from there."""
        watchdog = None
        if rec.task.timeout > 0:
            left = max(0.001, rec.task.timeout - elapsed)
            watchdog = asyncio.create_task(watch_timeout(run, left, self.kill))
        adapter = adoptive(self.adapters.get(rec.task.agent.type))
        run.proc = proc
        try:
            if adapter is None:
                return RunResult(State.FAILED, error="interrupted")
            began = RunStart(run.run_id, run.attempt, [], [])
            result = await adapter.adopt(
                RunCtx(host, run, rec, began, self.spawner), proc, offsets, tail
            )
            if isinstance(proc, KeptChild) and proc.lost:
                return self._lost(run)
            return result
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        except Exception as e:  # an adapter bug must not take the scheduler down
            log.exception("adopting run %s crashed", run.run_id)
            return RunResult(State.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        finally:
            if watchdog:
                watchdog.cancel()
            if proc.returncode is None:
                await terminate_group(proc.pid, grace=0.5, proc=proc)

    def _adoptable(self, task: Task) -> bool:
        """A plain command's run, not in a worktree: its agent outlives this engine if it dies
        (the next one carries it on), and nothing of it runs before its agent starts."""
        return task.worktree is None and adoptive(self.adapters.get(task.agent.type)) is not None

    def holds(self, rec: TaskRecord) -> bool:
        """Whether a run of ``rec`` may be sent ahead of a free slot (tui.engine.dispatch):
        its agent's start then waits at the keeper, or is given back if none comes free in
        time — only an adoptable run's (``_adoptable``)."""
        return self.keeper is not None and self._adoptable(rec.task)

    async def close(self) -> None:
        if self.keeper is not None:
            await self.keeper.close()
        for keeper in self.attached:
            await keeper.close()
        self.attached.clear()

    @staticmethod
    def _lost(run: Run) -> RunResult:
        # Not the task's failure: its agent was killed because the keeper died.
        run.kill_reason = run.kill_reason or "lost"
        return RunResult(State.FAILED, error="the keeper process that ran the agent died")

    async def kill(self, run: Run) -> None:
        if run.proc is not None:
            await terminate_group(run.proc.pid, grace=self.kill_grace, proc=run.proc)
        elif run.runner is not None and not run.runner.done():
            run.runner.cancel()


class _Counted:
    """The keeper's spawn for one run: its first agent takes one of the keeper's slots (the
    engine's concurrency), so that the keeper can start a run sent ahead the moment a slot
    frees (tui.procs.keeper_slots). An ``adoptable`` run's agent (a plain command's) outlives
    this engine if it dies, for the next one to carry on; such a run may be sent ahead
    (``Run.may_wait``): its start then waits for a slot, its timeout not counting meanwhile."""

    __slots__ = ("adoptable", "keeper", "run", "slots")

    def __init__(self, keeper: Keeper, run: Run, slots: int, adoptable: bool) -> None:
        self.keeper = keeper
        self.run = run
        self.slots = slots
        self.adoptable = adoptable

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: int = subprocess.DEVNULL,
        executable: str | None = None,
    ) -> Child:
        slots = self.slots
        run = self.run
        hold = self.adoptable and slots > 0 and run.may_wait
        if hold:
            run.pause_clock()
        try:
            child = await self.keeper.spawn(
                argv,
                cwd=cwd,
                env=env,
                stdin=stdin,
                executable=executable,
                run_id=run.run_id if self.adoptable else 0,
                adoptable=self.adoptable,
                slots=slots,
                hold=hold,
            )
        finally:
            if hold:
                run.resume_clock()
        self.slots = 0  # its slot is taken: a second process of the run is not counted
        return child


async def watch_timeout(run: Run, timeout: float, kill: Callable[[Run], Awaitable[None]]) -> None:
    """Kill ``run`` once it has worked ``timeout`` seconds (time waiting on a person is not
    counted)."""
    remaining = timeout
    loop = asyncio.get_running_loop()
    while remaining > 0:
        await run.working.wait()
        started = loop.time()
        with contextlib.suppress(TimeoutError):  # not wait_for: see daemon.remote
            async with asyncio.timeout(remaining):
                await run.waiting.wait()
        remaining -= loop.time() - started
    run.kill_reason = run.kill_reason or "timeout"
    await kill(run)


def ended_as(run: Run, rec: TaskRecord, result: RunResult) -> tuple[State, str]:
    """The attempt's outcome and error: a kill by the engine overrides what the agent said."""
    if run.kill_reason == "timeout":
        return State.TIMED_OUT, f"timed out after {format_duration(rec.task.timeout)}"
    if run.kill_reason == "cancel":
        return State.CANCELLED, run.kill_error or "cancelled by user"
    if run.kill_reason == "disk_full":
        return State.FAILED, run.kill_error
    if run.interrupted and result.outcome != State.COMPLETED:
        # Not when the agent had finished its work as the engine stopped: it must not rerun.
        said = run.kill_reason in ("lost", "unstarted")
        return State.FAILED, result.error if said else "interrupted"
    return result.outcome, result.error
