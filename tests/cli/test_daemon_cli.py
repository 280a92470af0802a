"""`tui daemon start|status|stop` and the commands that go through a running daemon."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks


def status(tui: Tui) -> dict:
    res = tui("daemon", "status", "--json")
    assert res.returncode in (0, 3), str(res)
    return json.loads(res.stdout)


def test_start_status_stop(tui: Tui) -> None:
    assert status(tui) == {"running": False, "db": str(tui.db)}
    assert tui("daemon", "status").returncode == 3

    res = tui("daemon", "start")
    assert res.returncode == 0 and "started" in res.stdout, str(res)
    s = status(tui)
    assert s["running"] and s["db"] == str(tui.db.resolve())
    assert s["uptime"] >= 0 and s["running_tasks"] == [] and s["protocol"] == 2
    os.kill(s["pid"], 0)  # alive, and not a child of this test: detached

    # Owner-only socket in an owner-only dir; a log file of its own.
    sock = Path(s["socket"])
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    log = Path(s["log"])
    assert "starting" in log.read_text() and stat.S_IMODE(log.stat().st_mode) == 0o600

    again = tui("daemon", "start")
    assert again.returncode == 0 and f"already running (pid {s['pid']})" in again.stdout

    human = tui("daemon", "status").stdout
    assert f"pid {s['pid']}" in human and str(sock) in human

    stopped = tui("daemon", "stop")
    assert stopped.returncode == 0 and f"(pid {s['pid']}) stopped" in stopped.stdout
    assert not sock.exists()
    assert status(tui)["running"] is False
    assert "no tui daemon running" in tui("daemon", "stop").stdout


def test_commands_go_through_the_daemon_and_runs_outlive_them(tui: Tui) -> None:
    assert tui("daemon", "start").returncode == 0
    pid = status(tui)["pid"]
    gate = tui.dir / "go"
    script = f"echo started; until [ -e {gate} ]; do sleep 0.05; done; echo finished"
    f = write_tasks(
        tui.dir / "t.yaml", [shell_task("held", script), shell_task("quick", "echo hi")]
    )

    # `tui run` hands the tasks to the daemon; Ctrl-C-free here: it follows until settled.
    run = tui.popen("run", str(f))
    wait_until(lambda: tui.state_of("held") == "RUNNING", "held to run", proc=run)
    assert [t["name"] for t in status(tui)["running_tasks"]] == ["held"]
    gate.touch()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert f"submitted 2 task(s) to the tui daemon (pid {pid})" in err
    assert "running → done" in " ".join(out.split())

    # The run belongs to the daemon: a task started by a `tui run` that was killed goes on.
    gate.unlink()
    f2 = write_tasks(tui.dir / "t2.yaml", [shell_task("held2", script)])
    run2 = tui.popen("run", str(f2))
    wait_until(lambda: tui.state_of("held2") == "RUNNING", "held2 to run", proc=run2)
    run2.kill()
    run2.communicate(timeout=10)
    assert tui.state_of("held2") == "RUNNING"
    res = tui("cancel", "held2")  # through the daemon's socket
    assert res.returncode == 0, str(res)
    wait_until(lambda: tui.state_of("held2") == "CANCELLED", "the cancel")
    assert status(tui)["pid"] == pid  # the same daemon all along


def test_a_run_through_the_daemon_prints_every_transition(tui: Tui) -> None:
    """The task may be done before `tui run` reads its first event: it still prints them all."""
    assert tui("daemon", "start").returncode == 0
    f = write_tasks(tui.dir / "one.yaml", [shell_task("instant", "true")])
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    shown = [line for line in res.stdout.splitlines() if " instant " in line]
    assert [line.split("→")[1].split()[0] for line in shown] == [
        "pending",
        "queued",
        "running",
        "done",
    ], res.stdout


def test_run_manual_approve_through_the_daemon_waits_for_approval(tui: Tui) -> None:
    assert tui("daemon", "start").returncode == 0  # auto-approves what it is given
    pid = status(tui)["pid"]
    f = write_tasks(tui.dir / "t.yaml", shell_task("gated", "echo approved-and-ran"))
    run = tui.popen("run", str(f), "--manual-approve", "--concurrency", "2")
    wait_until(lambda: tui.state_of("gated") == "PENDING", "task stored", proc=run)
    assert tui.by_name()["gated"]["attempts"] == 0
    assert run.poll() is None, "tui run ended while its task still waits for approval"

    res = tui("approve", "gated")
    assert res.returncode == 0, str(res)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert tui.state_of("gated") == "COMPLETED"
    assert "pending → queued" in " ".join(out.split())
    # The daemon keeps its own concurrency, and says so rather than ignore the flag quietly.
    assert (
        f"--concurrency only applies to an engine this command starts; the tui daemon (pid {pid})"
        in err
    )


def test_stop_with_running_tasks_names_them_and_asks(tui: Tui) -> None:
    assert tui("daemon", "start").returncode == 0
    pid = status(tui)["pid"]
    f = write_tasks(tui.dir / "t.yaml", [shell_task("long", "echo started; sleep 300")])
    run = tui.popen("run", str(f))  # hands the task to the daemon, then only follows it
    wait_until(lambda: tui.state_of("long") == "RUNNING", "long to run", proc=run)
    run.kill()
    run.communicate(timeout=10)

    # No terminal here: a refusal that names the task, what stopping does, and --yes.
    refused = tui("daemon", "stop")
    assert refused.returncode == 1, str(refused)
    assert "1 task(s) running" in refused.stderr and "long" in refused.stderr
    assert "--yes" in refused.stderr and "run again" in refused.stderr
    assert status(tui)["pid"] == pid and tui.state_of("long") == "RUNNING"

    stopped = tui("daemon", "stop", "--yes")
    assert stopped.returncode == 0 and f"(pid {pid}) stopped" in stopped.stdout, str(stopped)
    assert status(tui)["running"] is False
    assert tui.state_of("long") == "QUEUED"  # interrupted: it runs again at the next start


def test_a_failed_task_with_spaces_and_newlines_in_its_name_fails_the_run(tui: Tui) -> None:
    """Through the daemon, `tui run` once split a reply on whitespace and exited 0 although a
    task FAILED; names may hold spaces and newlines (ids may not)."""
    assert tui("daemon", "start").returncode == 0
    try:
        f = write_tasks(
            tui.dir / "odd.yaml",
            [
                shell_task("a name\nwith a newline", "exit 3", id="odd-1"),
                shell_task("fine one", "true", id="odd-2"),
            ],
        )
        res = tui("run", str(f))
        assert res.returncode == 1, str(res)
        assert "2 tasks: 1 done, 1 failed" in res.stderr, str(res)
        assert tui.state_of("a name\nwith a newline") == "FAILED"
        assert tui.state_of("fine one") == "COMPLETED"
        bad = write_tasks(tui.dir / "bad.yaml", [shell_task("x", "true", id="a b\nc")])
        refused = tui("run", str(bad))
        assert refused.returncode == 2 and "has characters an id may not have" in refused.stderr
    finally:
        tui("daemon", "stop")


def test_a_task_final_as_it_is_handed_over_still_has_its_transitions_printed(tui: Tui) -> None:
    """A task may be final before `tui run` first asks the daemon (a quick one under load; one
    whose dependency failed is at once): the run was not "nothing to run" with nothing shown."""
    assert tui("daemon", "start").returncode == 0
    first = tui("run", str(write_tasks(tui.dir / "a.yaml", [shell_task("bad", "exit 3")])))
    assert first.returncode == 1, str(first)
    bad = tui.by_name()["bad"]["id"]
    f = write_tasks(tui.dir / "b.yaml", [shell_task("after", "true", depends_on=[bad])])
    res = tui("run", str(f))
    assert "nothing to run" not in res.stderr, str(res)
    shown = [line for line in res.stdout.splitlines() if " after " in line]
    assert [line.split("→")[1].split()[0] for line in shown] == ["pending", "cancelled"], str(res)
    assert tui.state_of("after") == "CANCELLED", tui.by_name()["after"]
    assert res.returncode == 1, str(res)  # not every task completed
