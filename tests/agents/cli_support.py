"""What the real-CLI tests share: where the pinned CLIs live, reading back what the engine
stored, and the scripted model servers' life cycle (running on 127.0.0.1 in a thread, and
releasing every turn still held back, ``Turn.block``, when they stop)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest

from tests.conftest import stored
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.procs.process import spawn
from tui.store.db import Store
from tui.store.records import QuestionRecord, RunRecord, TaskRecord

CLI_BIN = Path(__file__).resolve().parents[2] / ".agent-clis" / "node_modules" / ".bin"


def cli_path(name: str) -> Path:
    return CLI_BIN / name


def needs_cli(name: str) -> pytest.MarkDecorator:
    """Skip (with the fix in the reason) when scripts/install-agent-clis has not run."""
    path = cli_path(name)
    return pytest.mark.skipif(
        not path.exists(),
        reason=f"the {name} CLI is not installed at {path}: run scripts/install-agent-clis",
    )


async def settled(engine: Engine, task_id: str) -> TaskRecord:
    """Wait (bounded) until the task has settled; its record then."""
    await asyncio.wait_for(engine.wait_settled([task_id]), 30)
    return await stored(engine, task_id)


async def continued(engine: Engine, store: Store, task: Task, server: Any) -> None:
    """Run ``task`` (its script answers "first answer", then "second answer"), `continue` it
    with "now the tests", and check that the second run resumed the first run's session and
    that the model got the message with the first answer before it."""
    from tests.conftest import wait_state
    from tui.engine import api
    from tui.model.states import State

    await engine.submit([task])
    await settled(engine, task.id)
    await engine.handle(api.Continue(task_id=task.id, text="now the tests"))
    await wait_state(engine, task.id, State.QUEUED, State.RUNNING, State.COMPLETED)
    await settled(engine, task.id)

    assert (await stored(engine, task.id)).state == State.COMPLETED
    first, second = await store.runs(task.id)
    assert first.session_id and second.session_id == first.session_id  # the CLI's resume
    last = server.turn_requests()[-1].flat_text()
    assert "now the tests" in last and "first answer" in last


async def raw_lines(store: Store, task_id: str) -> list[dict]:
    return [json.loads(row[-1]) for row in await store.read_raw(task_id)]


async def output(store: Store, task_id: str, stream: int = 1) -> list[str]:
    return [ln.text for ln in await store.read_output(task_id, stream=stream)]


class ScriptedServer:
    """Base of the scripted servers: its handler class reaches the server as ``server_owner``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._handler = handler
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._gates: list[threading.Event] = []  # set on stop, so no handler waits forever

    @staticmethod
    async def wait_reached(turn: Any, timeout: float = 30) -> None:
        """Wait until the server has got to ``turn`` (its ``reached`` event is set)."""
        if not await asyncio.to_thread(turn.reached.wait, timeout):
            raise AssertionError("the model server never got to that turn")

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_port}"  # where start() binds it

    def start(self) -> Self:
        handler = type("Handler", (self._handler,), {"server_owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for gate in self._gates:
            gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BareContext:
    """A RunContext for driving an adapter without an engine: records output, asks nothing."""

    def __init__(self, task: Task, previous: list[RunRecord]) -> None:
        self.task = task
        self.run_id = 2
        self.attempt = 2
        self.env = dict(os.environ)
        self.shell = "bash"
        self.rejection_comment = ""
        self.cost_so_far = 0.0
        self.previous_runs = previous
        self.late_answers: list[QuestionRecord] = []
        self.lines: list[tuple[int, str]] = []
        self.sessions: list[str] = []
        self.spawner = spawn  # the agent a child of this process, not of a keeper

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        raise AssertionError("nothing to ask")

    async def output(self, stream: int, lines: list[str]) -> None:
        self.lines.extend((stream, ln) for ln in lines)

    async def process_started(self, proc: Any) -> None:
        pass

    async def session_started(self, session_id: str) -> None:
        if session_id and session_id not in self.sessions:
            self.sessions.append(session_id)
