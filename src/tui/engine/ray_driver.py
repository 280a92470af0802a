"""The Ray driver: a process of its own between the engine and the Ray cluster.

Ray ends a driver whose head is gone; were the driver the engine's own process, the daemon (or
`tui run`) would end with it. So the engine's Ray executor starts this process
(``python -m tui.engine.ray_driver``) and talks to it in frames (``ray_wire``) over its stdin
and stdout; the driver joins the cluster and carries each run out in an actor
(``ray_worker.TaskRunner``), sending the run's event batches back as they come.

Engine → driver: ``("run", run_id, pickled spec, options)``, ``("answer", run_id, qid, reply)``,
``("message", run_id, mid, text)``, ``("kill", run_id)``, ``("close",)``.
Driver → engine: ``("ready",)`` or ``("unavailable", why)`` first; then ``("events", run_id,
pickled batch)`` (pickled by the worker: the driver does not open it), ``("end", run_id, lost,
error)`` (``error`` empty: the last batch had the result), ``("delivered", run_id, mid, ok)``;
``("down", why)`` before it exits when the head stops answering.

Its stdin closing (the engine exited, even by ``kill -9``) ends it, and with it the actors it
owns; their reapers end the agents' process groups on the nodes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

from tui.engine.ray_wire import frame, read_frame
from tui.store.records import STDERR

WATCH_EVERY = 0.5  # seconds between looks at the head
WATCH_MISSES = 3  # looks in a row without an answer: the head is gone
CONNECT_TIMEOUT = 5.0


class RayUnavailable(Exception):
    """Ray is not installed, or the cluster cannot be reached."""


RAY_MISSING = "the Ray executor needs the `ray` package: pip install 'tui[ray]'"


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    return host.strip("[]"), int(port)


def ray_error(e: BaseException) -> str:
    """Ray's error as one line: Ray Client passes on the server's whole traceback as the
    message (`Initialization failure from server: Traceback ...`); its last line says what
    failed."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    if len(lines) > 1 and any(line.startswith("Traceback") for line in lines):
        return f"{lines[0].removesuffix(':')}: {lines[-1]}"
    return " ".join(lines)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast, naming the address, when nothing listens there: ``ray.init`` itself waits
    minutes for a head that is not there."""
    if address == "auto" or address.startswith("local"):
        return
    try:
        socket.create_connection(split_address(address), timeout=timeout).close()
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


def join(address: str, forward_env: list[str]) -> tuple[Any, str]:
    """``ray.init`` to ``address``: (ray, the HOST:PORT whose answering means the head lives)."""
    ray = import_ray()
    check_reachable(address)
    # Forwarded only through the runtime env: the values never reach the store or a log.
    env = {name: os.environ[name] for name in forward_env if name in os.environ}
    try:
        ray.init(
            address=address,
            runtime_env={"env_vars": env} if env else None,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=False,
            include_dashboard=False,
        )
    except Exception as e:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address!r}: {ray_error(e)}") from e
    if address.startswith("ray://"):
        return ray, address.removeprefix("ray://")  # the client server is what we talk to
    return ray, str(ray.get_runtime_context().gcs_address)


class Driver:
    def __init__(
        self, ray: Any, watch: str, kill_grace: float, out: asyncio.StreamWriter, client: bool
    ):
        from tui.engine.ray_worker import TaskRunner

        self.ray = ray
        self.client = client  # joined by `ray://`: Ray Client
        self.watch = watch
        self.kill_grace = kill_grace
        self.out = out
        self.actor_cls = ray.remote(TaskRunner)
        self.idle: list[Any] = []  # actors without resources, between runs
        self.actors: dict[int, Any] = {}  # run_id -> its actor, while the run lasts
        self.killed: set[int] = set()
        self.placed: set[int] = set()  # runs whose actor has sent something: it is on a node
        self.tasks: set[asyncio.Task[None]] = set()

    async def send(self, *message: Any) -> None:
        self.out.write(frame(message))
        await self.out.drain()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve(self, reader: asyncio.StreamReader) -> None:
        self.spawn(self.watch_head())
        while (message := await read_frame(reader)) is not None:
            kind = message[0]
            if kind == "run":
                self.start(*message[1:])
            elif kind == "answer":
                actor = self.actors.get(message[1])
                if actor is not None:
                    actor.answer.remote(message[2], message[3])
            elif kind == "message":
                self.spawn(self.deliver(*message[1:]))
            elif kind == "kill":
                self.spawn(self.kill(message[1]))
            elif kind == "close":
                break
        for actor in self.idle:
            self.ray.kill(actor, no_restart=True)

    def start(self, run_id: int, spec: bytes, options: dict[str, Any]) -> None:
        # Only actors that hold nothing while idle are kept for the next run: one placed by
        # `resources:` keeps its CPUs, memory and custom resources for as long as it lives.
        actor = self.idle.pop() if not options and self.idle else None
        if actor is None:
            actor = self.actor_cls.options(**options).remote(self.kill_grace)
        self.actors[run_id] = actor
        if why := self.unplaceable(options):
            # Ray keeps such an actor pending, silently, until a node that fits joins.
            note = f"[tui] {why}; waiting for one (`tui cancel` stops this task)"
            self.spawn(self.send("events", run_id, pickle.dumps([("out", STDERR, note)])))
        self.spawn(self.stream(run_id, actor, spec, reusable=not options))

    def unplaceable(self, options: dict[str, Any]) -> str:
        """Why no live node can take an actor with these custom resources and labels ('' when
        one can, or when the cluster cannot say)."""
        want: dict[str, float] = options.get("resources", {})
        labels: dict[str, str] = options.get("label_selector", {})
        if not want and not labels:
            return ""
        try:
            nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        except Exception:  # Ray Client, or the head is going: the run says nothing
            return ""
        for n in nodes:
            have, has = n.get("Resources") or {}, n.get("Labels") or {}
            if all(have.get(k, 0) >= v for k, v in want.items()) and all(
                has.get(k) == v for k, v in labels.items()
            ):
                return ""
        asked = [f"{k}: {v:g}" for k, v in want.items()] + [f"{k}={v}" for k, v in labels.items()]
        return f"no live Ray node has {', '.join(asked)}"

    async def stream(self, run_id: int, actor: Any, spec: bytes, reusable: bool) -> None:
        ray = self.ray
        ended = False
        try:
            async for last, batch in self.batches(actor, spec):
                self.placed.add(run_id)
                ended = ended or last
                await self.send("events", run_id, batch)
            await self.send("end", run_id, False, "" if ended else "no result from the worker")
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
            # The node died, or the worker did: not the task's failure.
            await self.send("end", run_id, True, f"{type(e).__name__}: {e}")
        except Exception as e:
            await self.send("end", run_id, False, f"Ray: {type(e).__name__}: {e}")
        finally:
            self.actors.pop(run_id, None)
            self.placed.discard(run_id)
            if ended and reusable and run_id not in self.killed:
                self.idle.append(actor)
            else:
                ray.kill(actor, no_restart=True)
            self.killed.discard(run_id)

    async def batches(self, actor: Any, spec: bytes) -> AsyncIterator[tuple[bool, bytes]]:
        """The run's event batches: a streaming generator, or (Ray Client has none) a batch
        asked for at a time."""
        if self.client:
            await actor.begin.remote(spec)
            while (batch := await actor.next_batch.remote()) is not None:
                yield batch
            return
        async for ref in actor.run.options(num_returns="streaming").remote(spec):
            yield await ref

    async def deliver(self, run_id: int, mid: int, text: str) -> None:
        actor = self.actors.get(run_id)
        try:
            ok = actor is not None and bool(await actor.message.remote(text))
        except Exception:  # the actor is gone: the message did not arrive
            ok = False
        await self.send("delivered", run_id, mid, ok)

    async def kill(self, run_id: int) -> None:
        actor = self.actors.get(run_id)
        if actor is None:
            return
        self.killed.add(run_id)
        if run_id not in self.placed:
            # Not placed yet (no node fits, or it is starting): a call to the actor would wait
            # until it is. Ending it is enough: a process it started is its reaper's to end.
            self.ray.kill(actor, no_restart=True)
            return
        try:
            await actor.kill.remote()
        except Exception:  # the actor is gone: its reaper ends the process group
            self.ray.kill(actor, no_restart=True)

    async def watch_head(self) -> None:
        """Tell the engine, then end, once the head stops answering: Ray would end this
        process anyway (later, and without saying why)."""
        target = split_address(self.watch)
        misses = 0
        why = ""
        while misses < WATCH_MISSES:
            await asyncio.sleep(WATCH_EVERY)
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    _, w = await asyncio.open_connection(*target)
                w.close()
                misses = 0
            except (OSError, TimeoutError) as e:
                misses += 1
                why = getattr(e, "strerror", None) or str(e) or type(e).__name__
        await self.send("down", f"Ray head unreachable at {self.watch}: {why}")
        os._exit(0)  # ray.shutdown() would wait on the head that is gone


async def main(address: str, forward_env: list[str], kill_grace: float) -> None:
    loop = asyncio.get_running_loop()
    # The frames go out on a copy of stdout; what Ray prints goes to stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0)
    )
    out = asyncio.StreamWriter(transport, protocol, None, loop)
    reader = asyncio.StreamReader(limit=2**31)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        ray, watch = await asyncio.to_thread(join, address, forward_env)
    except RayUnavailable as e:
        out.write(frame(("unavailable", str(e))))
        await out.drain()
        return
    driver = Driver(ray, watch, kill_grace, out, client=address.startswith("ray://"))
    await driver.send("ready")
    await driver.serve(reader)


if __name__ == "__main__":  # python -m tui.engine.ray_driver ADDRESS FORWARD_ENV_JSON GRACE
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])))
    os._exit(0)  # not Ray's atexit: with the head gone it would wait on it
