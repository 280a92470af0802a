"""`tui daemon stop` while a run's end waits for room on a full disk: the stop returns, and the
next daemon finishes that run from `DB-ends` — once, not run again, nothing left running.
(The engine's side: tests/engine/test_stop_disk_full.py.)"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import IO

import pytest

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks
from tests.engine.test_stop_disk_full import fill

WAITING = "ends when it can be stored"


@pytest.fixture
def disk(tui: Tui) -> Iterator[Path]:
    """A 2 MB tmpfs for the database (and nothing else)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    path = tui.dir / "disk"
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(path)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield path
    finally:
        (path / "filler").unlink(missing_ok=True)  # a daemon left waiting for room can stop
        tui("daemon", "stop", "--yes")
        subprocess.run(["umount", "-l", str(path)], check=False)


def _writer(gate: Path) -> IO[bytes] | None:
    """The fifo's write end once its task reads it (None before: no reader yet)."""
    try:
        fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return None
        raise
    return os.fdopen(fd, "wb")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _left_behind(tui: Tui, daemons: list[int]) -> list[int]:
    """Live processes of these daemons: themselves, their keepers and guards (named by their
    engine's id), their agents (by the test's marker)."""
    engines = [row[0] for row in tui.sql("SELECT id FROM engines")]
    found = [pid for pid in daemons if _alive(pid)]
    for marker in (*engines, *tui.markers):
        found += marker_processes(marker)
    return found


@pytest.mark.parametrize("restart", ["daemon start", "run"])
def test_a_daemon_stopped_on_a_full_disk_returns_and_the_next_ends_the_run_once(
    tui: Tui, disk: Path, restart: str
) -> None:
    """Then space comes back, and `tui daemon start` or `tui run` (no file) takes over."""
    tui.db = disk / "tui.db"
    side = tui.dir / "side-effects"  # off the small disk: it must not be what fills it
    mark = tui.marker()
    gates = {n: tui.dir / f"go-{n}" for n in ("first", "second")}
    for gate in gates.values():
        os.mkfifo(gate)
    f = write_tasks(
        tui.dir / "two.yaml",
        [
            shell_task(n, f": {mark}; cat {gate} >/dev/null; echo {n} >> {side}; echo {n} says hi")
            for n, gate in gates.items()
        ],
    )
    assert tui("daemon", "start").returncode == 0
    status = json.loads(tui("daemon", "status", "--json").stdout)
    pid, log = status["pid"], Path(status["log"])
    follow = tui.popen("run", str(f))  # handed to the daemon: submits and follows
    writers = {n: wait_until(partial(_writer, g), f"{n} runs") for n, g in gates.items()}

    fill(disk)
    writers["first"].close()  # its end takes the room the daemon kept for ends (DB-room)
    wait_until(lambda: tui.state_of("first") not in ("RUNNING", None), "first ends")
    assert not (disk / "tui.db-room").exists()
    fill(disk)  # and now there is none at all
    writers["second"].close()
    wait_until(lambda: WAITING in log.read_text(), "second's end waits for room")
    assert side.read_text().split() == ["first", "second"]

    # Its agent has exited: a stop interrupts nothing of it, so it needs no --yes.
    (ending,) = json.loads(tui("daemon", "status", "--json").stdout)["running_tasks"]
    assert (ending["name"], ending["ending"]) == ("second", True), ending
    # Was: the stop waited for as long as the disk stayed full (and gave up after 30 s).
    stop = tui("daemon", "stop", timeout=20)
    assert (stop.returncode, stop.stdout.strip()) == (0, f"tui daemon (pid {pid}) stopped"), stop
    assert "second: ended, but the full disk refused to store the end" in stop.stderr, stop
    assert "left to the next engine (finished from the end log)" in log.read_text()
    _, errs = follow.communicate(timeout=20)  # the follower leaves with its daemon
    assert (follow.returncode, errs.splitlines()[-1]) == (1, "tui: the daemon was stopped"), errs
    assert tui.state_of("second") == "RUNNING"  # its end is in DB-ends, not stored
    assert b'"outcome":"FAILED"' in (disk / "tui.db-ends").read_bytes()
    assert _left_behind(tui, [pid]) == []

    (disk / "filler").unlink()
    daemons = [pid]
    if restart == "daemon start":
        assert tui("daemon", "start").returncode == 0
        daemons.append(json.loads(tui("daemon", "status", "--json").stdout)["pid"])
        wait_until(lambda: tui.state_of("second") != "RUNNING", "the next daemon ends second")
        stop = tui("daemon", "stop", timeout=20)  # nothing running: no --yes needed
        assert stop.returncode == 0, stop
    else:  # no file: it carries on what the database holds, in the foreground
        carry = tui("run", timeout=30)
        # second was unfinished when it began: its end is this run's outcome (was: exit 0,
        # "nothing to run: every stored task is final" after printing second's failure).
        assert "second" in carry.stdout and "running → failed" in carry.stdout, carry
        assert (carry.returncode, carry.stderr.splitlines()[-1]) == (1, "1 task: 1 failed"), carry
    beside = sorted(p.name for p in disk.iterdir())  # before this test's reads make a -wal
    assert beside == ["tui.db", "tui.db-ends"], beside  # no DB-room, no DB-kept-*
    second = tui.by_name()["second"]
    # A kept shell agent: its keeper held the lines the full disk refused, so the run fails
    # saying so (as it would have had the daemon waited for room), and is not run again.
    assert (second["state"], second["attempts"]) == ("FAILED", 1), second
    assert "database disk is full" in second["reason"], second
    assert tui.sql("SELECT COUNT(*) FROM runs WHERE task_id = ?", (second["id"],)) == [(1,)]
    assert side.read_text().split() == ["first", "second"]  # each ran once
    assert _left_behind(tui, daemons) == []
    assert (disk / "tui.db-ends").read_bytes().strip(b"\0") == b""  # every end is stored
