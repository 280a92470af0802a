"""A foreground `tui run` prints every transition once and in order, even when its printer
is far behind the engine when the run ends (a cascade of 100,000 in one pass printed 70,001
of its 200,002 transitions: the printer was cancelled as the engine stopped)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tui.engine.scheduler import Engine

CHAIN = 300


def test_a_printer_behind_the_engine_still_prints_every_transition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var, sub in (("XDG_RUNTIME_DIR", "run"), ("XDG_STATE_HOME", "state")):
        (tmp_path / sub).mkdir(mode=0o700)
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("TUI_DB", raising=False)
    lines = ["tasks:", "  - {id: t0, name: t0, agent: {type: shell, instructions: 'exit 1'}}"]
    lines += [
        f"  - {{id: t{i}, name: t{i}, depends_on: [t{i - 1}], agent: {{type: shell,"
        " instructions: 'true'}}"
        for i in range(1, CHAIN)
    ]
    (tmp_path / "chain.yaml").write_text("\n".join(lines) + "\n")

    # The printer (a viewer of the engine's events) falls behind after its first event and
    # catches up only once the engine has stopped: a terminal slower than a cascade.
    real_events, real_stop = Engine.events, Engine.stop
    stopped: dict[int, asyncio.Event] = {}

    async def behind(self: Engine, *a: Any, **kw: Any) -> AsyncIterator[Any]:
        async for ev in real_events(self, *a, **kw):
            yield ev
            await stopped.setdefault(id(self), asyncio.Event()).wait()
            await asyncio.sleep(0)  # each line takes a turn of the loop, as a slow terminal's

    async def stop(self: Engine, *a: Any, **kw: Any) -> None:
        await real_stop(self, *a, **kw)
        stopped.setdefault(id(self), asyncio.Event()).set()

    monkeypatch.setattr(Engine, "events", behind)
    monkeypatch.setattr(Engine, "stop", stop)
    from tui.cli.main import main

    db = tmp_path / "tui.db"
    assert main(["run", str(tmp_path / "chain.yaml"), "--json", "--db", str(db)]) == 1
    printed = [
        (d["task_id"], d["from"], d["to"])
        for d in map(json.loads, capsys.readouterr().out.splitlines())
    ]
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT task_id, from_state, to_state FROM events"
            " WHERE to_state IS NOT NULL ORDER BY id"
        ).fetchall()
    assert len(stored) == 2 * CHAIN + 2  # submitted and cancelled; t0 queued, ran, failed
    assert printed == [tuple(r) for r in stored]
