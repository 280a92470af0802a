"""`tui run` killed with SIGKILL: the next `tui run` adopts the shell agents the dead engine's
keeper kept (their runs go on, no line lost or stored twice), or, where no keeper kept them,
recovers and runs them again, losing no line."""

from __future__ import annotations

import os
import signal

import pytest

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks

LINES = 200
HOLD_AT = 40  # the first attempt stops here until killed, so the crash lands mid-output

# The marker in a comment puts it in the shell's command line, to find the task's processes.
SCRIPT = """\
# {marker}
for i in $(seq 1 {lines}); do
  echo "line $i"
  if [ "$i" -eq {hold} ] && [ "$TUI_ATTEMPT" -eq 1 ]; then
    n=0  # held until the engine is dead (the test opens the gate), 60 s at most
    while [ ! -e "{gate}" ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n+1)); done
  fi
  sleep 0.001
done
"""


def test_kill_9_then_run_adopts_every_task(tui: Tui) -> None:
    marker = tui.marker()
    gate = tui.dir / "gate"
    script = SCRIPT.format(marker=marker, lines=LINES, hold=HOLD_AT, gate=gate)
    names = ["r1", "r2", "r3"]
    f = write_tasks(tui.dir / "crash.yaml", [shell_task(n, script) for n in names])
    run = tui.popen("run", str(f), "--concurrency", "3")
    wait_until(lambda: _all_held(tui, names), f"every task RUNNING with line {HOLD_AT} stored")
    open_runs = tui.sql("SELECT id, task_id FROM runs WHERE ended_at IS NULL")
    assert len(open_runs) == len(names)

    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)  # the keeper left holds none of its pipes
    assert run.returncode == -signal.SIGKILL
    gate.touch()  # the agents go on with no engine, then under the next one

    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)

    # The runs the dead engine left open were carried on, not run again.
    for run_id, _ in open_runs:
        (outcome,) = tui.sql("SELECT outcome FROM runs WHERE id = ?", (run_id,))[0]
        assert outcome == "COMPLETED", (run_id, outcome)
    assert tui.sql("SELECT COUNT(*) FROM runs") == [(len(names),)]
    tasks = tui.by_name()
    for name in names:
        assert tasks[name]["state"] == "COMPLETED", tasks[name]
        assert tasks[name]["attempts"] == 1
        texts = [ln.text for ln in tui.output("task_id = ? AND stream = 1", (tasks[name]["id"],))]
        assert texts == [f"line {i}" for i in range(1, LINES + 1)]  # each once, in order
        logged = tui("logs", name, "--stream", "stdout").stdout.splitlines()
        assert logged == texts
    assert marker_processes(marker) == []


def _all_held(tui: Tui, names: list[str]) -> bool:
    running = dict(tui.sql("SELECT id, name FROM tasks WHERE state = 'RUNNING'"))
    held = {ln.task_id for ln in tui.output() if ln.text == f"line {HOLD_AT}"}
    return sorted(running[t] for t in held if t in running) == names


def test_kill_9_then_run_recovers_every_task(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> None:
    # Agents started in the engine's own process (no keeper keeps them): killed by recovery,
    # and run again.
    monkeypatch.setenv("TUI_KEEPER", "0")
    marker = tui.marker()
    script = SCRIPT.format(marker=marker, lines=LINES, hold=HOLD_AT, gate=tui.dir / "never")
    names = ["r1", "r2", "r3"]
    # The default max_attempts (1): an interrupted attempt is not one of the task's attempts.
    f = write_tasks(tui.dir / "crash.yaml", [shell_task(n, script) for n in names])
    run = tui.popen("run", str(f), "--concurrency", "3")

    def all_held() -> bool:
        running = dict(tui.sql("SELECT id, name FROM tasks WHERE state = 'RUNNING'"))
        held = {ln.task_id for ln in tui.output() if ln.text == f"line {HOLD_AT}"}
        return sorted(running[t] for t in held if t in running) == names

    wait_until(all_held, f"every task RUNNING with line {HOLD_AT} stored", proc=run)
    open_runs = tui.sql("SELECT id, task_id FROM runs WHERE ended_at IS NULL")
    assert len(open_runs) == len(names)

    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL
    # The dead engine's agents may or may not still be alive here; recovery must handle both.

    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)

    # Runs left open by the dead engine were ended as interrupted.
    for run_id, _ in open_runs:
        (outcome,) = tui.sql("SELECT outcome FROM runs WHERE id = ?", (run_id,))[0]
        assert outcome == "interrupted", (run_id, outcome)
    assert tui.sql("SELECT COUNT(*) FROM runs WHERE ended_at IS NULL") == [(0,)]

    log = tui.transitions()
    tasks = tui.by_name()
    for name in names:
        assert tasks[name]["state"] == "COMPLETED", tasks[name]
        assert tasks[name]["attempts"] == 2
        mine = [(frm, to, reason) for _, n, frm, to, reason in log if n == name]
        assert ("RUNNING", "QUEUED", "interrupted") in mine, mine
        assert not [m for m in mine if m[1] == "FAILED"], mine
        assert mine[-1][:2] == ("RUNNING", "COMPLETED"), mine
    # The printed transitions show the recovery too.
    assert "interrupted" in res.stdout

    assert marker_processes(marker) == []

    # No line stored twice: within each run, seq is exactly 1..N.
    for (run_id,) in tui.sql("SELECT DISTINCT run_id FROM output"):
        seqs = [ln.seq for ln in tui.output("run_id = ?", (run_id,))]
        assert seqs == list(range(1, len(seqs) + 1)), (run_id, seqs[:50])
    # The run that completed each task has all its lines, once each, in order.
    for name in names:
        task_id = tasks[name]["id"]
        (last_run,) = tui.sql(
            "SELECT id FROM runs WHERE task_id = ? AND outcome = 'COMPLETED'", (task_id,)
        )[0]
        texts = [ln.text for ln in tui.output("run_id = ? AND stream = 1", (last_run,))]
        assert texts == [f"line {i}" for i in range(1, LINES + 1)]
        # `tui logs` shows the interrupted attempt's lines and then the full second attempt.
        logged = tui("logs", name, "--stream", "stdout").stdout.splitlines()
        assert logged == [f"line {i}" for i in range(1, HOLD_AT + 1)] + texts
