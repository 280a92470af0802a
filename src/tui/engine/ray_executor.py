"""The Ray executor: each attempt runs in an actor on a node of a Ray cluster.

The engine is unchanged: it calls ``run`` and ``kill`` as it does the local executor's, and
stores what the run reports. Ray itself is not in the engine's process: a Ray driver process
(``ray_driver``), started on first use, joins the cluster and carries each run out in an actor
(``ray_worker.TaskRunner``); batches of events — output lines, questions, the session id —
come back through it as the worker produces them and go to the engine's ``RunHost``; answers
go back the same way. Actors of tasks without ``resources:`` are kept between runs (they hold
nothing while idle), so a short task costs one actor call, not a new worker process.

Failure: an actor that dies under a run (its node died, its worker was killed) ends the run as
interrupted (``kill_reason = "lost"``): the engine queues the task again without counting the
attempt. So does the driver ending (the head went away: Ray ends its drivers then), for every
run it carried; the engine lives on. A cluster that cannot be reached holds each attempt back,
saying why, and is tried again every few seconds; nothing stored is touched.

Imported only when ``[executor] kind = "ray"`` (or ``tui run --executor ray``) asks for it:
``ray`` is an optional dependency (``pip install 'tui[ray]'``), imported by the driver only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import sys
from typing import Any

from tui.engine.adapter import RunResult
from tui.engine.ray_driver import (
    RAY_MISSING,
    RayUnavailable,
    check_reachable,
    import_ray,
    ray_error,
)
from tui.engine.ray_wire import frame, read_frame
from tui.engine.runner import Run, RunHost, late_answers, run_markers, watch_timeout
from tui.model.states import State
from tui.store.records import STDERR, RunStart, TaskRecord

log = logging.getLogger(__name__)

RECONNECT_EVERY = 5.0  # seconds between tries to reach a cluster that did not answer
JOIN_TIMEOUT = 120.0  # seconds for the driver to join a cluster that listens

__all__ = ["RAY_MISSING", "RayExecutor", "RayUnavailable", "check_reachable", "import_ray"]


class _Driver:
    """The Ray driver process and the engine's end of its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.runs: dict[int, asyncio.Queue[tuple[Any, ...]]] = {}  # run_id -> its messages
        self.delivered: dict[int, asyncio.Future[bool]] = {}  # message id -> taken?
        self.down = ""  # why it ended, once it has
        self.gone = asyncio.Event()
        self.closing = False  # the engine let it go: its end is no news
        self._next_mid = 0
        self._reading: asyncio.Task[None] | None = None
        self._logging: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, address: str, forward_env: list[str], kill_grace: float) -> _Driver:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tui.engine.ray_driver",
            address,
            json.dumps(forward_env),
            str(kill_grace),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=2**31,
            start_new_session=True,  # a Ctrl-C to `tui run` is the engine's to handle
        )
        driver = cls(proc)
        driver._logging = asyncio.create_task(driver._log_stderr())
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(JOIN_TIMEOUT):
                first = await read_frame(proc.stdout)
        except TimeoutError:
            first = ("unavailable", f"cannot reach the Ray cluster at {address!r}: no answer")
        if first is None or first[0] != "ready":
            why = first[1] if first else f"the Ray driver exited ({await driver._exit_code()})"
            await driver.stop()
            raise RayUnavailable(why)
        driver._reading = asyncio.create_task(driver._read())
        return driver

    async def _exit_code(self) -> int | None:
        try:
            async with asyncio.timeout(5):
                return await self.proc.wait()
        except TimeoutError:
            return None

    async def _log_stderr(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            log.info("ray driver: %s", line.decode(errors="replace").rstrip())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while (message := await read_frame(self.proc.stdout)) is not None:
            kind = message[0]
            if kind in ("events", "end"):
                queue = self.runs.get(message[1])
                if queue is not None:
                    queue.put_nowait(message)
            elif kind == "delivered":
                fut = self.delivered.pop(message[2], None)
                if fut is not None and not fut.done():
                    fut.set_result(message[3])
            elif kind == "down":
                self.down = message[1]
        if not self.down:
            self.down = f"the Ray driver process exited ({await self._exit_code()})"
        if not self.closing:
            log.error("%s: runs on Ray are interrupted; tasks wait for the cluster", self.down)
        self.gone.set()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        for queue in self.runs.values():
            queue.put_nowait(("end", 0, True, self.down))
        for fut in self.delivered.values():
            if not fut.done():
                fut.set_result(False)
        self.delivered.clear()

    def send(self, *message: Any) -> None:
        if self.gone.is_set() or self.proc.stdin is None or self.proc.stdin.is_closing():
            return
        self.proc.stdin.write(frame(message))

    async def deliver(self, run_id: int, text: str) -> bool:
        if self.gone.is_set():
            return False
        self._next_mid += 1
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.delivered[self._next_mid] = fut
        self.send("message", run_id, self._next_mid, text)
        return await fut

    async def stop(self) -> None:
        """Close its stdin (it lets its idle actors go and exits); kill it if it lingers."""
        self.closing = True
        self.send("close")
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if await self._exit_code() is None:
            self.proc.kill()
            await self.proc.wait()
        for task in (self._reading, self._logging):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)


class RayExecutor:
    """Runs attempts on a Ray cluster (``address``: "auto", "HOST:PORT" or "ray://HOST:PORT")."""

    def __init__(
        self,
        address: str = "auto",
        *,
        forward_env: list[str] | None = None,
        kill_grace: float = 5.0,
    ) -> None:
        self.address = address
        self.forward_env = list(forward_env or [])
        self.kill_grace = kill_grace
        self._driver: _Driver | None = None
        self._connecting: asyncio.Future[_Driver] | None = None
        self.nodes: dict[int, str] = {}  # run_id -> node id, once the run reports it

    # -- the connection ----------------------------------------------------------------------

    async def connect(self) -> _Driver:
        """A live driver joined to the cluster (started once; later callers wait for the
        first). Raises RayUnavailable."""
        if self._driver is not None and not self._driver.gone.is_set():
            return self._driver
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(
                _Driver.start(self.address, self.forward_env, self.kill_grace)
            )
        connecting = self._connecting
        try:
            self._driver = await asyncio.shield(connecting)
        finally:
            if self._connecting is connecting and connecting.done():
                self._connecting = None  # a failure is tried again on the next run
        return self._driver

    async def _connected(self, run: Run, host: RunHost) -> _Driver:
        """Wait until the cluster can be joined. Meanwhile nothing is placed: the run says
        why in its output and waits (not counted against its timeout; cancel ends it)."""
        told = False
        while True:
            try:
                driver = await self.connect()
                if told:
                    await host.output_lines(run, STDERR, ["[tui] the Ray cluster answers again"])
                return driver
            except RayUnavailable as e:
                if not told:
                    told = True
                    log.error("%s; tasks wait for it", e)
                    await host.output_lines(
                        run, STDERR, [f"[tui] {e}; waiting for it (`tui cancel` stops this task)"]
                    )
            await asyncio.sleep(RECONNECT_EVERY)

    # -- the Executor seam ---------------------------------------------------------------------

    async def run(self, run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> RunResult:
        try:
            driver = await self._connected(run, host)
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        watchdog = None
        if rec.task.timeout > 0:
            # Its clock starts when a node has taken it ("node"), not while it waits for one.
            run.pause_clock()
            watchdog = asyncio.create_task(watch_timeout(run, rec.task.timeout, self.kill))
        options = rec.task.resources.ray_options() if rec.task.resources else {}
        queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        driver.runs[run.run_id] = queue
        if driver.gone.is_set():
            queue.put_nowait(("end", run.run_id, True, driver.down))
        # Pickled here and opened on the worker only: the driver hands it on as it is.
        spec = pickle.dumps(_spec(run, rec, began, host), pickle.HIGHEST_PROTOCOL)
        driver.send("run", run.run_id, spec, options)
        try:
            return await self._follow(driver, queue, run, host)
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        except Exception as e:
            log.exception("Ray run %s failed", run.run_id)
            return RunResult(State.FAILED, error=f"Ray: {type(e).__name__}: {e}")
        finally:
            if watchdog:
                watchdog.cancel()
            driver.runs.pop(run.run_id, None)
            self.nodes.pop(run.run_id, None)

    async def _follow(
        self, driver: _Driver, queue: asyncio.Queue[tuple[Any, ...]], run: Run, host: RunHost
    ) -> RunResult:
        """Carry the run's events to the host until its end."""
        asks: set[asyncio.Task[None]] = set()
        messages = asyncio.create_task(self._forward_messages(driver, run))
        result: RunResult | None = None
        try:
            while True:
                message = await queue.get()
                if message[0] == "end":
                    _, _, lost, error = message
                    break
                for event in pickle.loads(message[2]):
                    kind = event[0]
                    if kind == "out":
                        await host.output_lines(run, event[1], event[2].split("\n"))
                    elif kind == "ask":
                        task = asyncio.create_task(self._ask(driver, run, host, *event[1:]))
                        asks.add(task)
                        task.add_done_callback(asks.discard)
                    elif kind == "session":
                        await host.session_started(run, event[1])
                    elif kind == "node":
                        self.nodes[run.run_id] = event[1]
                        if not run.open_questions:
                            run.resume_clock()
                        await host.node_started(run, event[1])
                    elif kind == "result":
                        result = RunResult(**event[1])
        finally:
            messages.cancel()
            for task in asks:
                task.cancel()
        if lost:
            # The node died, the worker did, or the driver (the head went away): not the
            # task's failure.
            run.kill_reason = run.kill_reason or "lost"
            where = self.nodes.get(run.run_id, "")
            log.warning("Ray run %s lost: %s", run.run_id, error)
            if driver.down:
                return RunResult(State.FAILED, error=f"{driver.down}; run interrupted")
            return RunResult(State.FAILED, error=f"the Ray node {where[:12]} running it was lost")
        if result is None:
            return RunResult(State.FAILED, error=error or "the Ray worker ended without a result")
        return result

    async def _forward_messages(self, driver: _Driver, run: Run) -> None:
        """`tui send`: the run's messages go to the actor, whose adapter hands them on."""
        while True:
            text, delivered = await run.inbox.get()
            ok = await driver.deliver(run.run_id, text)
            if not delivered.done():
                delivered.set_result(ok)

    async def _ask(
        self, driver: _Driver, run: Run, host: RunHost, qid: int, kind: str, payload: dict[str, Any]
    ) -> None:
        reply = await host.ask_person(run, kind, payload)
        driver.send("answer", run.run_id, qid, reply)

    async def close(self) -> None:
        """Let the driver go (its idle actors' resources return to the cluster)."""
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
            self._connecting = None
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.stop()

    async def kill(self, run: Run) -> None:
        driver = self._driver
        if driver is None or run.run_id not in driver.runs:
            if run.runner is not None and not run.runner.done():
                run.runner.cancel()
            return
        driver.send("kill", run.run_id)


def _spec(run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> dict[str, Any]:
    """What the worker needs to build the adapter's RunContext there."""
    return {
        "task": rec.task,
        "run_id": run.run_id,
        "attempt": run.attempt,
        "shell": host.shell,
        "rejection_comment": rec.rejection_comment,
        "cost_so_far": rec.cost_usd,
        "previous_runs": began.previous_runs,
        "late_answers": late_answers(began),
        "env": run_markers(run, rec, host),
    }


def probe(address: str) -> dict[str, Any]:
    """The cluster at ``address`` as `tui doctor` shows it: each live node with its total and
    free resources and its labels. Raises RayUnavailable. Blocking (run it in a process of its
    own)."""
    ray = import_ray()
    check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except Exception as e:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address!r}: {ray_error(e)}") from e
    if address.startswith("ray://"):  # Ray Client has no cluster state: ask from inside it
        nodes = ray.get(ray.remote(num_cpus=0)(_nodes).remote())
    else:
        nodes = _nodes()
    return {"ray": ray.__version__, "nodes": nodes}


def _nodes() -> list[dict[str, Any]]:
    ray = import_ray()
    from ray._private import state  # the per-node free resources have no public call yet

    free = state.available_resources_per_node()  # type: ignore[no-untyped-call,unused-ignore]
    return [
        {
            "id": n["NodeID"],
            "address": n.get("NodeManagerAddress", ""),
            "head": "node:__internal_head__" in n["Resources"],
            "total": {k: v for k, v in n["Resources"].items() if not k.startswith("node:")},
            "free": {
                k: v for k, v in free.get(n["NodeID"], {}).items() if not k.startswith("node:")
            },
            # The labels it was started with (`ray start --labels`), not Ray's own `ray.io/`.
            "labels": {
                k: v for k, v in (n.get("Labels") or {}).items() if not k.startswith("ray.io/")
            },
        }
        for n in ray.nodes()
        if n["Alive"]
    ]


if __name__ == "__main__":  # `python -m tui.engine.ray_executor ADDRESS`: the probe, as JSON
    try:
        print(json.dumps(probe(sys.argv[1])))
    except RayUnavailable as e:
        print(json.dumps({"error": str(e)}))
