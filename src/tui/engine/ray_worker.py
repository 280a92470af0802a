"""The worker side of the Ray executor: an actor that carries out one run at a time.

It runs the task's agent adapter on its node exactly as the local executor would here — the
agent process in its own process group, output split into lines — and hands everything the
engine must see back as batches of events through a streaming generator (``run``): output
lines, questions, the session id, the process id, and the result last. Answers come back
through ``answer``; ``kill`` ends the process group. Nothing durable lives here: the engine
stores the events as they arrive.

A reaper process per actor kills the run's process group if this actor's worker dies without
doing so (a node shutting down, ``ray.kill``, the engine's driver exiting): see ``_reaper``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from tui.engine.adapter import AdapterError, RunResult, declared_adapters
from tui.model.states import State
from tui.model.task import Task
from tui.procs.groups import terminate_group
from tui.procs.process import Child, spawn
from tui.store.records import QuestionRecord, RunRecord

# Lines held before the adapter waits for the engine to take them (output backpressure).
OUTBOX_HIGH_WATER = 20_000
FIRST_BATCH_WAIT = 0.01  # seconds: a task done by then sends its node with its result
# The reaper, one per actor: "+PGID" / "-PGID" lines on its stdin say which group the actor's
# run holds. EOF while a group is held means the actor's worker died without ending it: the
# reaper ends it (TERM, then KILL after the grace). It is a grandchild of the worker, not a
# child: a Ray worker that exits kills its own children (the agent's leader, a reaper) but not
# theirs, so the script's background jobs would be left behind.
_REAPER = r"""
import os, signal, sys, time
if os.fork():
    os._exit(0)
os.setsid()
held = set()
for line in sys.stdin:
    sign, pgid = line[0], int(line[1:])
    (held.add if sign == "+" else held.discard)(pgid)
def alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False
for pgid in held:
    for sig in (signal.SIGTERM, signal.SIGCONT):
        try: os.killpg(pgid, sig)
        except OSError: pass
deadline = time.monotonic() + float(sys.argv[1])
while any(alive(g) for g in held) and time.monotonic() < deadline:
    time.sleep(0.05)
for pgid in held:
    try: os.killpg(pgid, signal.SIGKILL)
    except OSError: pass
"""

Event = tuple[Any, ...]
Packed = tuple[bool, bytes]  # (the run's last batch?, the pickled list of events)


class WorkerCtx:
    """The ``RunContext`` on the worker: events go to the actor's outbox."""

    def __init__(self, actor: TaskRunner, spec: dict[str, Any]) -> None:
        self._actor = actor
        self.task: Task = spec["task"]
        self.run_id: int = spec["run_id"]
        self.attempt: int = spec["attempt"]
        self.shell: str = spec["shell"]
        self.rejection_comment: str = spec["rejection_comment"]
        self.cost_so_far: float = spec["cost_so_far"]
        self.previous_runs: list[RunRecord] = spec["previous_runs"]
        self.late_answers: list[QuestionRecord] = spec["late_answers"]
        # A person's messages to the agent, forwarded by the engine (``TaskRunner.message``).
        self.inbox: asyncio.Queue[tuple[str, asyncio.Future[bool]]] = asyncio.Queue()
        self.spawner = spawn  # the worker's agents are its own children
        # This node's environment (with what the executor forwards through the runtime env),
        # then the task's own, then the run's markers; `tui` beside this Python on PATH.
        path = os.environ.get("PATH", os.defpath)
        self.env: dict[str, str] = {
            **os.environ,
            **self.task.agent.env,
            "PATH": f"{path}{os.pathsep}{os.path.dirname(sys.executable)}",
            **spec["env"],
            "TUI_NODE_ID": actor.node(),  # the Ray node: where the task runs
        }

    async def output(self, stream: int, lines: list[str], end: int | None = None) -> None:
        # One string per read chunk (lines never hold "\n"): pickling a list of many short
        # strings costs several times more.
        await self._actor.emit(("out", stream, "\n".join(lines)), len(lines))

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        return await self._actor.ask(kind, payload)

    async def process_started(self, proc: Child) -> None:
        # The pid means nothing on the engine's machine: the actor ends the group itself.
        self._actor.started(proc)

    async def session_started(self, session_id: str) -> None:
        await self._actor.emit(("session", session_id), 0)


class TaskRunner:
    """One Ray actor (made with ``ray.remote`` by the executor): one run at a time."""

    def __init__(self, kill_grace: float = 5.0) -> None:
        self.kill_grace = kill_grace
        self._outbox: list[Event] = []
        self._held = 0  # output lines in the outbox
        self._ready = asyncio.Event()  # the outbox has something, or the run ended
        self._drained = asyncio.Event()
        self._answers: dict[int, asyncio.Future[dict[str, Any] | None]] = {}
        self._next_question = 0
        self._proc: Child | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self._job: asyncio.Task[RunResult] | None = None
        self._killed = False
        self._late_kill: asyncio.Future[None] | None = None
        self._node = ""
        self._ctx: WorkerCtx | None = None
        self._batches: AsyncIterator[Packed] | None = None
        # Started with the actor, not with a run: a run's group is handed to it the moment
        # the process exists, with no interpreter start in between.
        self._reaper_says("+0")

    def node(self) -> str:
        if not self._node:
            import ray

            self._node = str(ray.get_runtime_context().get_node_id())
        return self._node

    async def run(self, packed_spec: bytes) -> AsyncIterator[Packed]:
        """The run to its end, as batches of events; the last event is ``("result", {...})``.
        The spec comes pickled by the engine, and each batch goes pickled (with whether it is
        the last): the driver hands both on as they are, without opening them."""
        spec: dict[str, Any] = pickle.loads(packed_spec)
        # The node goes with the first batch, the result with the last: a short task is one
        # round trip.
        self._outbox, self._held, self._killed = [("node", self.node())], 0, False
        self._proc = None
        self._ready.clear()
        self._drained.set()
        self._ctx = WorkerCtx(self, spec)
        self._job = asyncio.ensure_future(self._carry_out(self._ctx))
        self._job.add_done_callback(lambda _: self._ready.set())
        # A task that ends at once goes back in one batch; any other tells its node now.
        await asyncio.wait([self._job], timeout=FIRST_BATCH_WAIT)
        self._ready.set()
        while True:
            await self._ready.wait()
            self._ready.clear()
            done = self._job.done()
            batch, self._outbox, self._held = self._outbox, [], 0
            self._drained.set()
            if done:
                yield True, pickle.dumps([*batch, ("result", asdict(self._job.result()))], -1)
                return
            if batch:
                yield False, pickle.dumps(batch, -1)

    # Ray Client (`ray://`) has no streaming generators: there the driver starts the run with
    # ``begin`` and asks for each batch with ``next_batch`` (None once the result has gone).
    async def begin(self, packed_spec: bytes) -> None:
        self._batches = self.run(packed_spec)

    async def next_batch(self) -> Packed | None:
        if self._batches is None:
            return None
        try:
            return await anext(self._batches)
        except StopAsyncIteration:
            return None

    async def _carry_out(self, ctx: WorkerCtx) -> RunResult:
        adapters = declared_adapters()
        try:
            if ctx.task.agent.type not in adapters:
                return RunResult(
                    State.FAILED,
                    error=f"agent type {ctx.task.agent.type!r} is not supported by this tui yet",
                )
            return await adapters[ctx.task.agent.type].run(ctx)
        except AdapterError as e:
            return RunResult(State.FAILED, error=str(e))
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        except Exception as e:  # an adapter bug must not take the actor down
            return RunResult(State.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        finally:
            if self._proc is not None:
                await terminate_group(self._proc.pid, grace=0.5)
            self._reaped()

    async def emit(self, event: Event, lines: int) -> None:
        self._outbox.append(event)
        self._held += lines
        self._ready.set()
        if self._held >= OUTBOX_HIGH_WATER:
            self._drained.clear()
            await self._drained.wait()

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        self._next_question += 1
        qid = self._next_question
        answer: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._answers[qid] = answer
        await self.emit(("ask", qid, kind, payload), 0)
        try:
            return await answer
        finally:
            self._answers.pop(qid, None)

    def answer(self, qid: int, reply: dict[str, Any] | None) -> None:
        fut = self._answers.get(qid)
        if fut is not None and not fut.done():
            fut.set_result(reply)

    async def message(self, text: str) -> bool:
        """A person's message for the running agent: whether its adapter took it."""
        if self._ctx is None or self._job is None or self._job.done():
            return False
        taken: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._ctx.inbox.put_nowait((text, taken))
        return await taken

    def started(self, proc: Child) -> None:
        self._proc = proc
        self._reaper_says(f"+{proc.pid}")
        if self._killed:  # a kill came in while the process was starting
            self._late_kill = asyncio.ensure_future(self.kill())

    def _reaped(self) -> None:
        if self._proc is not None:
            self._reaper_says(f"-{self._proc.pid}")

    def _reaper_says(self, line: str) -> None:
        """ "+PGID" / "-PGID" to the reaper ("+0": only start it)."""
        if self._reaper is None:
            self._reaper = subprocess.Popen(
                [sys.executable, "-c", _REAPER, str(self.kill_grace)],
                stdin=subprocess.PIPE,
                start_new_session=True,
            )
            self._reaper.wait()  # the launcher exits at once; its child watches our pipe
        if line == "+0":
            return
        assert self._reaper.stdin is not None
        self._reaper.stdin.write(f"{line}\n".encode())
        self._reaper.stdin.flush()

    async def kill(self) -> None:
        """End the run's process group (TERM, KILL after the grace); before it has started,
        stop the adapter."""
        self._killed = True
        if self._proc is not None:
            await terminate_group(self._proc.pid, grace=self.kill_grace, proc=self._proc)
        elif self._job is not None and not self._job.done():
            self._job.cancel()
