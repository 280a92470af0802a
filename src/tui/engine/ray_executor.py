"""The Ray executor: each attempt runs in an actor on a node of a Ray cluster.

The engine is unchanged: it calls ``run`` and ``kill`` as it does the local executor's, and
stores what the run reports. Here a run is one call of the actor's streaming generator
(``ray_worker.TaskRunner.run``): batches of events — output lines, questions, the session id
— arrive as the worker produces them and go to the engine's ``RunHost``; answers go back by
``TaskRunner.answer``. Actors of tasks without ``resources:`` are kept between runs (they hold
nothing while idle), so a short task costs one actor call, not a new worker process.

Failure: an actor that dies under a run (its node died, its worker was killed) ends the run as
interrupted (``kill_reason = "lost"``): the engine queues the task again without counting the
attempt. A cluster that cannot be reached fails each attempt with that reason, and nothing
stored is touched.

Imported only when ``[executor] kind = "ray"`` (or ``tui run --executor ray``) asks for it:
``ray`` is an optional dependency (``pip install 'tui[ray]'``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from typing import Any

from tui.engine.adapter import RunResult
from tui.engine.runner import Run, RunHost, late_answers, run_markers, watch_timeout
from tui.model.states import State
from tui.store.records import STDERR, RunStart, TaskRecord

log = logging.getLogger(__name__)

RECONNECT_EVERY = 5.0  # seconds between tries to reach a cluster that did not answer
RAY_MISSING = "the Ray executor needs the `ray` package: pip install 'tui[ray]'"


class RayUnavailable(Exception):
    """Ray is not installed, or the cluster cannot be reached."""


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast, naming the address, when nothing listens there: ``ray.init`` itself waits
    minutes for a head that is not there."""
    if address == "auto" or address.startswith("local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise RayUnavailable(
            f"cannot reach the Ray cluster at {address!r}: {e.strerror or e}"
        ) from None


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(RAY_MISSING) from None
    return ray


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
        self._ray: Any = None
        self._actor_cls: Any = None
        self._connecting: asyncio.Future[None] | None = None
        self._idle: list[Any] = []  # actors without resources, between runs
        self._actors: dict[int, Any] = {}  # run_id -> its actor, while the run lasts
        self.nodes: dict[int, str] = {}  # run_id -> node id, once the run reports it

    # -- the connection ----------------------------------------------------------------------

    async def connect(self) -> None:
        """Join the cluster (once; later callers wait for the first). Raises RayUnavailable."""
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(asyncio.to_thread(self._init))
        try:
            await asyncio.shield(self._connecting)
        except RayUnavailable:
            self._connecting = None  # try again on the next run
            raise

    def _init(self) -> None:
        ray = import_ray()
        check_reachable(self.address)
        # Forwarded only through the runtime env: the values never reach our store or log.
        env = {name: os.environ[name] for name in self.forward_env if name in os.environ}
        try:
            if not ray.is_initialized():
                ray.init(
                    address=self.address,
                    runtime_env={"env_vars": env} if env else None,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                    include_dashboard=False,
                )
        except Exception as e:
            raise RayUnavailable(f"cannot reach the Ray cluster at {self.address!r}: {e}") from e
        from tui.engine.ray_worker import TaskRunner

        self._ray = ray
        self._actor_cls = ray.remote(TaskRunner)

    # -- the Executor seam ---------------------------------------------------------------------

    async def _connected(self, run: Run, host: RunHost) -> None:
        """Wait until the cluster can be joined. Meanwhile nothing is placed: the run says
        why in its output and waits (not counted against its timeout; cancel ends it)."""
        told = False
        while True:
            try:
                await self.connect()
                if told:
                    await host.output_lines(run, STDERR, ["[tui] the Ray cluster answers again"])
                return
            except RayUnavailable as e:
                if not told:
                    told = True
                    log.error("%s; tasks wait for it", e)
                    await host.output_lines(
                        run, STDERR, [f"[tui] {e}; waiting for it (`tui cancel` stops this task)"]
                    )
            await asyncio.sleep(RECONNECT_EVERY)

    async def run(self, run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> RunResult:
        try:
            await self._connected(run, host)
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        watchdog = None
        if rec.task.timeout > 0:
            watchdog = asyncio.create_task(watch_timeout(run, rec.task.timeout, self.kill))
        options = rec.task.resources.ray_options() if rec.task.resources else {}
        # Only actors that hold nothing while idle are kept for the next run: one placed by
        # `resources:` keeps its CPUs, memory and custom resources for as long as it lives.
        reusable = not options
        actor = self._idle.pop() if reusable and self._idle else None
        if actor is None:
            actor = self._actor_cls.options(**options).remote(self.kill_grace)
        self._actors[run.run_id] = actor
        keep = False
        try:
            result, keep = await self._stream(actor, run, rec, began, host)
            return result
        except asyncio.CancelledError:
            return RunResult(State.FAILED, error="interrupted")
        except Exception as e:
            return self._failed(run, e)
        finally:
            if watchdog:
                watchdog.cancel()
            self._actors.pop(run.run_id, None)
            self.nodes.pop(run.run_id, None)
            if keep and reusable:
                self._idle.append(actor)
            else:
                self._ray.kill(actor, no_restart=True)

    def _failed(self, run: Run, e: Exception) -> RunResult:
        ray = self._ray
        lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
        if isinstance(e, lost):
            # The node died, or the worker did: not the task's failure.
            run.kill_reason = run.kill_reason or "lost"
            where = self.nodes.get(run.run_id, "")
            return RunResult(State.FAILED, error=f"the Ray node {where[:12]} running it was lost")
        log.exception("Ray run %s failed", run.run_id)
        return RunResult(State.FAILED, error=f"Ray: {type(e).__name__}: {e}")

    async def _stream(
        self, actor: Any, run: Run, rec: TaskRecord, began: RunStart, host: RunHost
    ) -> tuple[RunResult, bool]:
        """Carry the events of the actor's run to the host; (the result, the actor is reusable)."""
        spec = _spec(run, rec, began, host)
        asks: set[asyncio.Task[None]] = set()
        messages = asyncio.create_task(self._forward_messages(actor, run))
        gen = actor.run.options(num_returns="streaming").remote(spec)
        result: RunResult | None = None
        try:
            async for ref in gen:
                for event in await ref:
                    kind = event[0]
                    if kind == "out":
                        await host.output_lines(run, event[1], event[2].split("\n"))
                    elif kind == "ask":
                        task = asyncio.create_task(self._ask(actor, run, host, *event[1:]))
                        asks.add(task)
                        task.add_done_callback(asks.discard)
                    elif kind == "session":
                        await host.session_started(run, event[1])
                    elif kind == "node":
                        self.nodes[run.run_id] = event[1]
                        await host.node_started(run, event[1])
                    elif kind == "result":
                        result = RunResult(**event[1])
        finally:
            messages.cancel()
            for task in asks:
                task.cancel()
        if result is None:
            return RunResult(State.FAILED, error="the Ray worker ended without a result"), False
        return result, not run.kill_reason

    async def _forward_messages(self, actor: Any, run: Run) -> None:
        """`tui send`: the run's messages go to the actor, whose adapter hands them on."""
        while True:
            text, delivered = await run.inbox.get()
            try:
                ok = bool(await actor.message.remote(text))
            except Exception:  # the actor is gone: the message did not arrive
                ok = False
            if not delivered.done():
                delivered.set_result(ok)

    async def _ask(
        self, actor: Any, run: Run, host: RunHost, qid: int, kind: str, payload: dict[str, Any]
    ) -> None:
        reply = await host.ask_person(run, kind, payload)
        await actor.answer.remote(qid, reply)

    async def close(self) -> None:
        """Let the idle actors go (their resources return to the cluster)."""
        idle, self._idle = self._idle, []
        for actor in idle:
            self._ray.kill(actor, no_restart=True)

    async def kill(self, run: Run) -> None:
        actor = self._actors.get(run.run_id)
        if actor is None:
            if run.runner is not None and not run.runner.done():
                run.runner.cancel()
            return
        try:
            await actor.kill.remote()
        except Exception:  # the actor is gone: its reaper ends the process group
            self._ray.kill(actor, no_restart=True)


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
    free resources. Raises RayUnavailable. Blocking (run it in a process of its own)."""
    ray = import_ray()
    check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except Exception as e:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address!r}: {e}") from e
    from ray._private import state  # the per-node free resources have no public call yet

    free = state.available_resources_per_node()  # type: ignore[no-untyped-call,unused-ignore]
    nodes = [
        {
            "id": n["NodeID"],
            "address": n.get("NodeManagerAddress", ""),
            "head": "node:__internal_head__" in n["Resources"],
            "total": {k: v for k, v in n["Resources"].items() if not k.startswith("node:")},
            "free": {
                k: v for k, v in free.get(n["NodeID"], {}).items() if not k.startswith("node:")
            },
        }
        for n in ray.nodes()
        if n["Alive"]
    ]
    return {"ray": ray.__version__, "nodes": nodes}


if __name__ == "__main__":  # `python -m tui.engine.ray_executor ADDRESS`: the probe, as JSON
    import sys

    try:
        print(json.dumps(probe(sys.argv[1])))
    except RayUnavailable as e:
        print(json.dumps({"error": str(e)}))
