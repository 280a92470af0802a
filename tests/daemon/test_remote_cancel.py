"""A viewer told to stop stops, even when the daemon's greeting arrives at that very moment
(found by bench/chaos.py: a cancelled follower went on following a daemon it had restarted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui.daemon import protocol as wire
from tui.daemon import remote
from tui.daemon.paths import daemon_paths


class _Writer:
    def close(self) -> None:
        pass


async def test_a_cancel_that_meets_the_hello_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = asyncio.StreamReader()

    async def connected(*_args: object, **_kw: object) -> tuple[asyncio.StreamReader, _Writer]:
        return reader, _Writer()

    monkeypatch.setattr(asyncio, "open_unix_connection", connected)
    opening = asyncio.create_task(remote._open(daemon_paths(tmp_path / "tui.db")))
    for _ in range(20):  # until it waits for the greeting (nothing else runs meanwhile)
        await asyncio.sleep(0)
    assert not opening.done()
    # The greeting and the cancel in one step: the read completes first, the cancel after.
    reader.feed_data(wire.encode({"t": "hello", "protocol": wire.PROTOCOL, "pid": 1}))
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
