"""The settings a daemon was started with are stored per database: a daemon that a viewer
starts again comes back with them, and a new value given on a command line replaces them."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks
from tests.cli.test_cli_concurrency import SCRIPT

SHELL_NAME = 'echo "shell=$(cat /proc/$$/comm)"'


def status(tui: Tui) -> dict:
    res = tui("daemon", "status", "--json")
    assert res.returncode in (0, 3), str(res)
    return json.loads(res.stdout)


def kill_daemon(tui: Tui) -> None:
    pid = status(tui)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), "the daemon to die")


def _zombie(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2] == "Z"


def test_a_daemon_restarted_by_a_viewer_comes_back_with_its_settings(tui: Tui) -> None:
    start = tui("daemon", "start", "--concurrency", "5", "--shell", "sh")
    assert start.returncode == 0 and "concurrency 5, shell sh" in start.stdout, str(start)
    f = write_tasks(tui.dir / "t.yaml", shell_task("gated", SHELL_NAME))
    run = tui.popen("run", str(f), "--manual-approve")
    wait_until(lambda: tui.state_of("gated") == "PENDING", "the task stored", proc=run)
    run.kill()
    kill_daemon(tui)

    # A viewer that needs the engine starts the daemon again, with no flags of its own.
    follow = tui.popen("logs", "-f", "gated")
    wait_until(lambda: status(tui)["running"], "a daemon started by `tui logs -f`", proc=follow)
    s = status(tui)
    assert (s["concurrency"], s["shell"]) == (5, "sh"), s
    assert tui("approve", "gated").returncode == 0
    out, err = follow.communicate(timeout=60)
    assert out == "shell=sh\n", err  # the task really ran in the stored shell


def test_an_engine_tui_run_starts_reuses_them_and_a_new_value_replaces_them(tui: Tui) -> None:
    assert tui("daemon", "start", "--concurrency", "3", "--shell", "sh").returncode == 0
    assert tui("daemon", "stop").returncode == 0

    # `tui run` with no daemon runs its own engine: with the stored 3 slots (the barrier
    # script reaches exactly 3 tasks at once, never more) in the stored shell.
    for sub in ("active", "started"):
        (tui.dir / sub).mkdir()
    barrier = SCRIPT.format(dir=tui.dir, limit=3, total=6)
    tasks = [shell_task(f"w{i}", barrier) for i in range(6)]
    f = write_tasks(tui.dir / "t.yaml", [*tasks, shell_task("which", SHELL_NAME)])
    res = tui("run", str(f), timeout=90)
    assert res.returncode == 0, str(res)
    counts = [int(x) for x in (tui.dir / "counts.log").read_text().split()]
    assert max(counts) == 3, counts
    assert tui("logs", "which").stdout == "shell=sh\n"

    # A value given now replaces the stored one, says so, and is kept; the other stays.
    start = tui("daemon", "start", "--concurrency", "2")
    assert start.returncode == 0, str(start)
    assert f"--concurrency 2 replaces the 3 stored for {tui.db}" in start.stderr, str(start)
    assert "concurrency 2, shell sh" in start.stdout
    kill_daemon(tui)
    again = tui("daemon", "start")
    assert "concurrency 2, shell sh" in again.stdout and again.stderr == "", str(again)
    human = tui("daemon", "status").stdout
    assert "settings: concurrency 2, shell sh" in human
