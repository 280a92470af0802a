"""An engine stopped while a run's end waits for room on a full disk: the stop does not wait
for the disk, and the next engine finishes that run as it ended — once, its output whole."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import shell_task
from tests.engine.test_output_disk_full import small_disk  # noqa: F401  (a fixture)
from tui.engine import run_end
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

WAITING = "ends when it can be stored"


def fill(disk: Path) -> None:
    """Take every byte left on ``disk`` (unbuffered: nothing left to flush at the close)."""
    with open(disk / "filler", "ab", buffering=0) as f:
        for size in (65536, 4096, 512, 1):
            while True:
                try:
                    if f.write(b"\0" * size) < size:
                        break
                except OSError:
                    break


async def _until(what: str, check: object, timeout: float = 60) -> None:
    """Wait until ``check()`` is true; fail naming ``what`` at the deadline."""
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("keeper", ["1", "0"], ids=["kept", "logged"])
async def test_a_stop_leaves_an_end_the_full_disk_refused_to_the_next_engine(
    small_disk: Path,  # noqa: F811
    tmp_path: Path,
    keeper: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The end goes to the end log, which keeps room of its own for ends on a full disk, and
    the next engine finishes the run from there. Logged (no keeper, as for an agent that
    cannot be kept): recorded before its last lines met the full disk, it completes with
    them. Kept (a shell agent, whose keeper held its lines): those lines were refused, so it
    fails saying so, as it would have had the engine waited for room — run once either way."""
    monkeypatch.setenv("TUI_KEEPER", keeper)
    monkeypatch.setattr(run_end, "DISK_FULL_RETRY", 0.01)
    caplog.set_level(logging.ERROR, logger="tui.engine.run_end")
    side = tmp_path / "side-effects"  # off the small disk: it must not be what fills it
    gates = {n: tmp_path / f"go-{n}" for n in ("first", "second")}
    for gate in gates.values():
        os.mkfifo(gate)
    store = await Store.open(small_disk / "tui.db")
    try:
        engine = Engine(store, concurrency=2)
        await engine.start()
        ids = await engine.submit(
            [
                shell_task(n, f"cat {gate} >/dev/null; echo {n} >> {side}; echo {n} says hi")
                for n, gate in gates.items()
            ]
        )
        first, second = ids
        writers = {n: await asyncio.to_thread(open, gate, "w") for n, gate in gates.items()}
        fill(small_disk)
        writers["first"].close()  # its end takes the room the engine kept for ends
        async with asyncio.timeout(60):
            await engine.wait_settled([first])
        fill(small_disk)  # and now there is none at all
        writers["second"].close()
        await _until("the second run's end waiting for room", lambda: WAITING in caplog.text)
        tries = []
        end_run = store.end_run

        def counted(*args: Any, **kwargs: Any) -> Any:
            tries.append(args)
            return end_run(*args, **kwargs)

        monkeypatch.setattr(store, "end_run", counted)
        await _until("three more tries to store it", lambda: len(tries) >= 3)
        assert caplog.text.count(WAITING) == 1  # said once, not at each try
        async with asyncio.timeout(30):  # was: for as long as the disk stayed full
            await engine.stop()
        assert side.read_text().split() == ["first", "second"]

        (small_disk / "filler").unlink()
        # Its process would end here (`tui daemon stop`); this one lives on, so the row the
        # full disk kept would name a live engine: gone as the process's end would make it.
        await store.unregister_engine(engine.id)
        again = Engine(store, concurrency=2)
        await again.start()
        try:
            async with asyncio.timeout(60):
                await again.wait_settled([second])
            rec = await again.get(second)
            assert rec is not None and rec.attempts == 1, rec  # not run a second time
            lines = [ln.text for ln in await store.read_output(second)]
            if keeper == "0":
                assert rec.state == State.COMPLETED, (rec.state, rec.reason)
                assert lines == ["second says hi"]
            else:
                assert rec.state == State.FAILED, (rec.state, rec.reason)
                assert "database disk is full" in (rec.reason or ""), rec.reason
        finally:
            await again.stop()
        assert side.read_text().split() == ["first", "second"]
    finally:
        await store.close()
