"""The real `tui` command in a real terminal (tmux): open the sample that asks a question,
answer it with keys, and check both the screen and the database."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tui.store.chunks import stored_lines

ROOT = Path(__file__).resolve().parents[2]
TUI = Path(sys.executable).parent / "tui"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, tmp: Path) -> None:
        self.socket = f"tui-test-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp

    def __call__(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    def alive(self) -> bool:
        return (
            subprocess.run(
                ["tmux", "-L", self.socket, "has-session", "-t", "tui"],
                capture_output=True,
                timeout=20,
            ).returncode
            == 0
        )


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    yield t
    subprocess.run(["tmux", "-L", t.socket, "kill-server"], capture_output=True, timeout=20)


def wait(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)  # polling a real terminal for a condition, with a deadline
    raise AssertionError(f"timed out waiting for {what}")


def symbol_of(screen: str, name: str) -> str:
    """The state symbol on the task list row of ``name`` (the word beside it shows only
    when the pane has room for it)."""
    for line in screen.splitlines():
        words = line.split()
        if name in words[:3]:
            return words[0]
    return ""


def db_rows(db: Path, sql: str) -> list[tuple]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def test_answer_a_question_in_the_real_app(tmux: Tmux, tmp_path: Path) -> None:
    db = tmp_path / "tui.db"
    env = (
        f"TUI_STATE_DIR={tmp_path / 'state'} TUI_CONFIG_DIR={tmp_path / 'config'} "
        f"TUI_NOTIFY=off PATH={os.environ['PATH']}"
    )
    command = f"cd {ROOT} && env {env} {TUI} open sample_tasks/ask.yaml --db {db}"
    tmux("new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", command)
    wait(lambda: "Questions (1)" in tmux.screen(), "the question to show")
    assert "choose-database" in tmux.screen()

    tmux("send-keys", "-t", "tui", "a")
    wait(lambda: "PostgreSQL" in tmux.screen(), "the question panel")
    tmux("send-keys", "-t", "tui", "2", "Enter")

    state = "SELECT state FROM tasks WHERE name = 'choose-database'"
    wait(lambda: db_rows(db, state) == [("COMPLETED",)], "the task to complete")
    wait(lambda: symbol_of(tmux.screen(), "choose-database") == "✓", "the list to show it done")
    rows = db_rows(
        db, "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output ORDER BY id"
    )
    assert [ln.text for ln in stored_lines(rows)] == ["configuring for PostgreSQL"]

    tmux("send-keys", "-t", "tui", "q")
    wait(lambda: not tmux.alive(), "the app to quit")


def test_the_ssh_link_drops_and_the_run_goes_on(tmux: Tmux, tmp_path: Path) -> None:
    """Kill the terminal the app runs in (what a dropped SSH link does), then open `tui`
    again: the task kept running in the daemon and the app shows it finish."""
    db = tmp_path / "tui.db"
    gate = tmp_path / "go"
    tasks = tmp_path / "long.yaml"
    tasks.write_text(
        "name: long-build\nagent:\n  type: shell\n  instructions: |\n"
        f"    echo first half; until [ -e {gate} ]; do sleep 0.05; done; echo second half\n"
    )
    env = (
        f"TUI_STATE_DIR={tmp_path / 'state'} TUI_CONFIG_DIR={tmp_path / 'config'} "
        f"XDG_RUNTIME_DIR={os.environ['XDG_RUNTIME_DIR']} TUI_NOTIFY=off PATH={os.environ['PATH']}"
    )
    command = f"cd {tmp_path} && env {env} {TUI} open {tasks} --db {db}"
    tmux("new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", command)
    wait(lambda: symbol_of(tmux.screen(), "long-build") == "▶", "the task to run")
    tmux("kill-session", "-t", "tui")  # the terminal goes away under the app (SIGHUP)
    wait(lambda: not tmux.alive(), "the terminal to close")

    state = "SELECT state FROM tasks WHERE name = 'long-build'"
    assert db_rows(db, state) == [("RUNNING",)]
    status = subprocess.run(
        [str(TUI), "daemon", "status", "--db", str(db)], capture_output=True, text=True, timeout=30
    )
    assert "long-build" in status.stdout, status.stdout + status.stderr

    # Reopened with a setting the running daemon cannot take: the app says so.
    reopen = command.replace(str(tasks), "--concurrency 2")
    tmux("new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", reopen)
    wait(lambda: "long-build" in tmux.screen(), "the task after reopening")
    wait(lambda: "--concurrency only" in tmux.screen(), "the notice that the daemon keeps its own")
    wait(lambda: "first half" in tmux.screen(), "the output it printed while nobody watched")
    gate.touch()
    wait(lambda: symbol_of(tmux.screen(), "long-build") == "✓", "the list to show it done")
    wait(lambda: "second half" in tmux.screen(), "the rest of its output")
    tmux("send-keys", "-t", "tui", "q")
    wait(lambda: not tmux.alive(), "the app to quit")
