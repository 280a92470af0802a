"""Helpers for the end-to-end CLI tests: they run the real `tui` command as a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from tui.store.chunks import stored_lines
from tui.store.records import OutputLine

TUI = [sys.executable, "-m", "tui"]
RUN_TIMEOUT = 60.0  # seconds any one `tui` invocation may take before the test fails
POLL = 0.02  # seconds between looks at a condition we wait for (not a synchronisation sleep)


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"tui {' '.join(self.args)} -> exit {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


def assert_no_traceback(res: Result) -> None:
    for text in (res.stdout, res.stderr):
        assert "Traceback" not in text, str(res)


def wait_until(
    predicate: Callable[[], Any], what: str, timeout: float = 30.0, proc: Any = None
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` at the deadline.

    If ``proc`` (a Popen) exits meanwhile, fail at once with its output instead of waiting.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out, errs = proc.communicate()
            pytest.fail(f"`tui run` exited ({proc.returncode}) before: {what}\n{out}\n{errs}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for: {what}")
        time.sleep(POLL)


def write_tasks(path: Path, tasks: list[dict[str, Any]] | dict[str, Any]) -> Path:
    """Write a task file: a list becomes a `tasks:` batch, a mapping a single task."""
    data = {"tasks": tasks} if isinstance(tasks, list) else tasks
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def shell_task(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra, "agent": {"type": "shell", "instructions": script}}


def marker_processes(marker: str) -> list[int]:
    """Live (non-zombie) pids whose command line contains ``marker``."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 1 :].split()[0]
        if marker.encode() in cmdline and state not in (b"Z", b"X", b"x"):
            found.append(int(entry))
    return found


class Tui:
    """The `tui` command bound to one database file inside ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.db = tmp_path / "tui.db"
        self.popens: list[subprocess.Popen[str]] = []
        # Markers of task processes this test starts, for cleanup if an assertion fails.
        self.markers: list[str] = []

    def _argv(self, args: tuple[str, ...], db: bool) -> list[str]:
        argv = [*TUI, *args]
        if db:
            argv += ["--db", str(self.db)]
        return argv

    def __call__(self, *args: str, db: bool = True, timeout: float = RUN_TIMEOUT) -> Result:
        proc = subprocess.run(
            self._argv(args, db),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
        )
        res = Result(list(args), proc.returncode, proc.stdout, proc.stderr)
        assert_no_traceback(res)
        return res

    def popen(self, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            self._argv(args, True),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=self.dir,
        )
        self.popens.append(proc)
        return proc

    def marker(self) -> str:
        m = f"tui-e2e-{uuid.uuid4().hex[:12]}"
        self.markers.append(m)
        return m

    # -- reading the outcome ---------------------------------------------------------------

    def ls(self, *extra: str) -> list[dict[str, Any]]:
        res = self("ls", "--json", *extra)
        assert res.returncode == 0, str(res)
        return json.loads(res.stdout)

    def by_name(self) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in self.ls()}

    def sql(self, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if not self.db.exists():
            return []
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(query, args).fetchall()
        except sqlite3.OperationalError as e:  # the schema may not exist yet
            if "no such table" in str(e):
                return []
            raise
        finally:
            conn.close()

    def output(self, where: str = "1 = 1", args: tuple[Any, ...] = ()) -> list[OutputLine]:
        """Stored output lines (split out of their chunk rows), oldest first."""
        rows = self.sql(
            "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output"
            f" WHERE {where} ORDER BY id",
            args,
        )
        return list(stored_lines(rows))

    def transitions(self) -> list[tuple[int, str, str | None, str, str]]:
        """(id, task name, from, to, reason) in the order they happened."""
        return self.sql(
            "SELECT t.id, k.name, t.from_state, t.to_state, t.reason"
            " FROM transitions t JOIN tasks k ON k.id = t.task_id ORDER BY t.id"
        )

    def state_of(self, name: str) -> str | None:
        rows = self.sql("SELECT state FROM tasks WHERE name = ?", (name,))
        return rows[0][0] if rows else None

    def cleanup(self) -> None:
        for proc in self.popens:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(Exception):
                proc.communicate(timeout=10)
        for m in self.markers:
            for pid in marker_processes(m):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


class Lines:
    """A subprocess's stdout read line by line as it comes (a thread: the pipe blocks)."""

    def __init__(self, stream: IO[str] | None, proc: subprocess.Popen[str] | None = None) -> None:
        assert stream is not None, "start the process with stdout=PIPE"
        self.proc = proc  # named with its exit code and stderr if the output ends too soon
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def until(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if m := re.search(pattern, line):
                    return m
            left = deadline - time.monotonic()
            assert left > 0, f"no line matching {pattern!r} in {self.lines}"
            try:
                got = self._q.get(timeout=left)
            except queue.Empty:
                continue
            assert got is not None, f"output ended without {pattern!r}: {self.lines}{self._why()}"
            self.lines.append(got)

    def _why(self) -> str:
        proc = self.proc
        if proc is None or proc.stderr is None:
            return ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        return f"; exit {proc.returncode}, stderr: {proc.stderr.read()!r}"

    def rest(self, timeout: float = 60.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while (line := self._q.get(timeout=max(0.1, deadline - time.monotonic()))) is not None:
            self.lines.append(line)
        return self.lines
