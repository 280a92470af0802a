"""A real daemon process per test, on a real database file, and viewers attached over its
socket the way the app and the CLI attach."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tui.daemon.lifecycle import ensure
from tui.daemon.remote import RemoteEngine
from tui.store.chunks import stored_lines
from tui.store.records import OutputLine


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "tui.db"


@pytest.fixture
async def viewer(db: Path) -> AsyncIterator[RemoteEngine]:
    """The first viewer: starting it starts the daemon (the autouse runtime fixture stops it)."""
    remote = await ensure(db, concurrency=4)
    yield remote
    await remote.aclose()


def stored_output(db: Path, where: str = "1 = 1") -> list[OutputLine]:
    """The output lines in the database file (split out of their chunk rows), oldest first."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output"
            f" WHERE {where} ORDER BY id"
        ).fetchall()
    finally:
        con.close()
    return list(stored_lines(rows))


def db_rows(db: Path, sql: str) -> list[tuple]:
    """Rows of a read-only query on the database file, as another process would see them."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
