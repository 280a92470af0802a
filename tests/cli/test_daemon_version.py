"""A daemon started by another tui (the user upgraded): restarted when idle, named otherwise.

The daemon is a real process whose reported version is faked with TUI_VERSION_OVERRIDE (it
inherits the environment of the `tui daemon start` that spawned it)."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks
from tui.daemon.protocol import VERSION_ENV, software_version

OLD = "0.0.9-old"


def status(tui: Tui) -> dict:
    res = tui("daemon", "status", "--json")
    assert res.returncode in (0, 3), str(res)
    return json.loads(res.stdout)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_old_daemon(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv(VERSION_ENV, OLD)
    assert tui("daemon", "start").returncode == 0
    s = status(tui)
    assert s["version"] == OLD
    return int(s["pid"])


def test_an_idle_daemon_of_another_tui_is_restarted_and_the_run_goes_on(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = start_old_daemon(tui, monkeypatch)
    monkeypatch.delenv(VERSION_ENV)

    f = write_tasks(tui.dir / "t.yaml", [shell_task("hello", "echo hi")])
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    assert f"restarted the tui daemon (pid {old} ran tui {OLD}" in res.stderr
    assert tui.state_of("hello") == "COMPLETED"
    wait_until(lambda: not alive(old), "the old daemon to exit")
    s = status(tui)
    assert s["pid"] != old and s["version"] == software_version()


def test_a_busy_daemon_of_another_tui_is_named_with_how_to_restart_it(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = start_old_daemon(tui, monkeypatch)
    gate = tui.dir / "go"
    held = write_tasks(
        tui.dir / "held.yaml",
        [shell_task("held", f"until [ -e {gate} ]; do sleep 0.05; done; echo finished")],
    )
    follower = tui.popen("run", str(held))  # the old tui's client: same version, accepted
    wait_until(lambda: tui.state_of("held") == "RUNNING", "held to run", proc=follower)
    monkeypatch.delenv(VERSION_ENV)

    f = write_tasks(tui.dir / "t.yaml", [shell_task("new", "echo hi")])
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    assert f"the tui daemon (pid {old}) for" in res.stderr
    assert f"runs tui {OLD}, this is tui {software_version()}" in res.stderr
    assert "`tui daemon stop`" in res.stderr
    # Nothing was submitted, nothing was stopped.
    assert tui.state_of("new") is None and tui.state_of("held") == "RUNNING"
    assert status(tui)["pid"] == old

    # `tui daemon status` and `stop` reach it whatever it runs.
    assert f"version:  tui {OLD}" in tui("daemon", "status").stdout
    stopped = tui("daemon", "stop", "--yes")
    assert stopped.returncode == 0 and f"(pid {old}) stopped" in stopped.stdout
    gate.touch()
    follower.communicate(timeout=60)


def test_a_daemon_whose_agent_waits_for_an_answer_is_busy_not_restarted(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task waiting in `tui ask` needs you (READY), but its agent runs: restarting the daemon
    would interrupt it and run it again."""
    old = start_old_daemon(tui, monkeypatch)
    ask = 'echo "got $(tui ask "Which database?" --option SQLite --option PostgreSQL)"'
    asking = write_tasks(tui.dir / "ask.yaml", [shell_task("pick", ask)])
    follower = tui.popen("run", str(asking))
    wait_until(lambda: tui.state_of("pick") == "READY", "pick to ask", proc=follower)
    follower.kill()  # no viewer is left: only the waiting agent keeps the daemon busy
    follower.communicate(timeout=60)
    wait_until(lambda: status(tui)["viewers"] == 0, "the follower's stream to close")
    assert [r["name"] for r in status(tui)["running_tasks"]] == ["pick"]
    monkeypatch.delenv(VERSION_ENV)

    f = write_tasks(tui.dir / "t.yaml", [shell_task("new", "echo hi")])
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    assert f"runs tui {OLD}, this is tui {software_version()}" in res.stderr
    assert status(tui)["pid"] == old and tui.state_of("pick") == "READY"

    monkeypatch.setenv(VERSION_ENV, OLD)  # the old tui answers: its agent goes on, once
    [q] = json.loads(tui("questions", "--json").stdout)
    assert tui("answer", q["id"][:8], "2").returncode == 0
    wait_until(lambda: tui.state_of("pick") == "COMPLETED", "pick to finish")
    assert [ln.text for ln in tui.output()] == ["got PostgreSQL"]
    runs = tui.sql(
        "SELECT count(*) FROM runs JOIN tasks ON tasks.id = runs.task_id WHERE name = ?", ("pick",)
    )
    assert runs == [(1,)]
