"""One way in: whoever owns a database serves its socket, and every client finds it there —
with a timeout, across runtime dirs, and across a daemon restart."""

from __future__ import annotations

import json
import os
import shlex
import signal
import tempfile
import time
from pathlib import Path

import pytest

from tests.cli.cli_support import Lines, Tui, shell_task, wait_until, write_tasks

CLIENT_DEADLINE = 30.0  # a client facing a stopped daemon must give up well before this


def status(tui: Tui) -> dict:
    res = tui("daemon", "status", "--json")
    assert res.returncode in (0, 3), str(res)
    return json.loads(res.stdout)


def test_a_stopped_daemon_is_named_instead_of_hanging_its_clients(tui: Tui) -> None:
    assert tui("daemon", "start").returncode == 0
    pid = status(tui)["pid"]
    f = write_tasks(tui.dir / "t.yaml", shell_task("one", "true"))
    os.kill(pid, signal.SIGSTOP)
    try:
        for args in (("daemon", "status"), ("run", str(f)), ("daemon", "start")):
            began = time.monotonic()
            res = tui(*args, timeout=CLIENT_DEADLINE)
            assert res.returncode == 1, str(res)
            assert f"pid {pid}" in res.stderr and f"kill -CONT {pid}" in res.stderr, str(res)
            assert time.monotonic() - began < 20
    finally:
        os.kill(pid, signal.SIGCONT)
    assert status(tui)["pid"] == pid  # it was only stopped, and answers again


def test_status_and_stop_find_a_daemon_started_with_another_runtime_dir(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tui("daemon", "start").returncode == 0
    pid = status(tui)["pid"]
    other = Path(tempfile.mkdtemp(prefix="tui-rt2-"))  # as from tmux or an SSH session
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(other))
    s = status(tui)
    assert s["running"] and s["pid"] == pid
    again = tui("daemon", "start")
    assert again.returncode == 0 and f"already running (pid {pid})" in again.stdout, str(again)
    stopped = tui("daemon", "stop")
    assert stopped.returncode == 0 and f"(pid {pid}) stopped" in stopped.stdout, str(stopped)
    assert status(tui)["running"] is False
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_run_handed_to_a_foreground_run_is_carried_to_the_end(tui: Tui) -> None:
    gate_a, gate_b = tui.dir / "a", tui.dir / "b"
    wait = "until [ -e {} ]; do sleep 0.02; done; echo done"
    first = tui.popen(
        "run", str(write_tasks(tui.dir / "a.yaml", shell_task("a1", wait.format(gate_a))))
    )
    wait_until(lambda: tui.state_of("a1") == "RUNNING", "a1 running", proc=first)
    second = tui.popen(
        "run", str(write_tasks(tui.dir / "b.yaml", shell_task("b1", wait.format(gate_b))))
    )
    wait_until(lambda: tui.state_of("b1") == "RUNNING", "b1 handed over", proc=second)
    gate_a.touch()  # the owner's own task ends first...
    wait_until(lambda: tui.state_of("a1") == "COMPLETED", "a1 done", proc=first)
    assert first.poll() is None, "the owner ended while a task it accepted still ran"
    gate_b.touch()  # ...and it keeps going until the one it accepted is done too
    out_b, err_b = second.communicate(timeout=60)
    out_a, err_a = first.communicate(timeout=60)
    assert second.returncode == 0, err_b
    assert first.returncode == 0, err_a
    assert "submitted 1 task(s) to the `tui run` (pid" in err_b
    assert any(" b1 " in ln and "running → done" in ln for ln in out_b.splitlines()), out_b
    assert any(" b1 " in ln and "running → done" in ln for ln in out_a.splitlines()), out_a
    assert tui.state_of("b1") == "COMPLETED"
    assert status(tui)["running"] is False  # no daemon was needed


def test_run_shows_a_question_and_the_command_that_answers_it(tui: Tui) -> None:
    ask = 'echo "using $(tui ask "Which database?" --option SQLite --option PostgreSQL)"'
    run = tui.popen("run", str(write_tasks(tui.dir / "q.yaml", shell_task("pick", ask))))
    out = Lines(run.stdout)
    out.until(r"pick\s+asks: Which database\?")
    out.until(r"1\. SQLite\s+2\. PostgreSQL")
    # The exact command, --db included (this database is not the default one): run as printed.
    command = shlex.split(out.until(r"answer: (tui answer .+?) ANSWER").group(1))
    assert command[:4] == ["tui", "answer", "--db", str(tui.db)], command
    res = tui(*command[1:], "2", db=False)
    assert res.returncode == 0, str(res)
    out.rest()
    assert run.wait(timeout=60) == 0
    assert [ln.text for ln in tui.output()] == ["using PostgreSQL"]


def test_run_json_through_the_daemon_prints_every_transition_once_across_a_restart(
    tui: Tui,
) -> None:
    """A busy run, and the daemon killed halfway: the follower starts it again and prints
    exactly the stored transitions of its tasks, in order."""
    assert tui("daemon", "start", "--concurrency", "8").returncode == 0
    pid = status(tui)["pid"]
    tasks = [shell_task(f"t{i:03d}", "sleep 0.02") for i in range(120)]
    run = tui.popen("run", "--json", str(write_tasks(tui.dir / "busy.yaml", tasks)))
    wait_until(
        lambda: len(tui.sql("SELECT 1 FROM tasks WHERE state = 'COMPLETED'")) >= 30,
        "a quarter done",
        proc=run,
    )
    os.kill(pid, signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    assert "Traceback" not in err
    new = status(tui)
    assert new["running"] and new["pid"] != pid, "the follower did not start the daemon again"
    printed = [json.loads(line) for line in out.splitlines()]
    shown = [(p["task_id"], p["from"], p["to"]) for p in printed]
    stored = tui.sql(
        "SELECT task_id, from_state, to_state FROM events WHERE to_state IS NOT NULL ORDER BY id"
    )
    assert len(shown) >= 4 * len(tasks)  # PENDING, QUEUED, RUNNING, an end: each task
    assert shown == [tuple(row) for row in stored]
    assert all(tui.state_of(t["name"]) in ("COMPLETED", "FAILED") for t in tasks)


def test_logs_follow_streams_a_running_task_to_its_end(tui: Tui) -> None:
    gate = tui.dir / "gate"
    script = f"echo one; until [ -e {gate} ]; do sleep 0.02; done; echo two; echo oops >&2"
    run = tui.popen("run", str(write_tasks(tui.dir / "t.yaml", shell_task("talker", script))))
    wait_until(lambda: tui.output() != [], "the first line stored", proc=run)
    follow = tui.popen("logs", "-f", "talker", "--stream", "stdout")
    out = Lines(follow.stdout, follow)
    out.until("^one$")  # from the database, before it attaches to the run
    assert follow.poll() is None  # following, not done
    # The task ends now, while `logs -f` attaches: the run (its owner) may be gone before the
    # follower's stream begins. Either way it prints the rest and starts no daemon in the run's
    # place (it did: "lost the tui daemon … is back", and a daemon left running).
    gate.touch()
    assert out.rest() == ["one", "two"]
    assert follow.wait(timeout=30) == 0
    assert run.wait(timeout=60) == 0
    said = follow.stderr.read() if follow.stderr else ""
    assert "lost the tui daemon" not in said, said
    assert not status(tui)["running"], "a daemon was started for a run that had ended"


def test_a_foreground_owner_is_shown_by_status_and_not_stopped_as_a_daemon(tui: Tui) -> None:
    gate = tui.dir / "gate"
    task = shell_task("held", f"until [ -e {gate} ]; do sleep 0.02; done")
    run = tui.popen("run", str(write_tasks(tui.dir / "t.yaml", task)))
    wait_until(lambda: tui.state_of("held") == "RUNNING", "held running", proc=run)
    s = status(tui)
    assert s["running"] and s["foreground"] and s["pid"] == run.pid
    assert "foreground" in tui("daemon", "status").stdout
    refused = tui("daemon", "stop")
    assert refused.returncode == 1 and f"(pid {run.pid}) owns it" in refused.stderr
    assert run.poll() is None and tui.state_of("held") == "RUNNING"
    gate.touch()
    assert run.wait(timeout=60) == 0
