"""`tui cancel | retry | approve` from another process, with and without a live engine."""

from __future__ import annotations

import random

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks


def _long_task(tui: Tui) -> tuple[dict, str]:
    # A unique sleep length marks this test's processes in /proc (cleanup kills leftovers).
    marker = f"300.{random.randrange(10**8, 10**9)}"
    tui.markers.append(marker)
    # A background grandchild, a foreground child, and the script itself (kept alive by
    # `wait`, so bash does not exec the last command in its own place).
    script = f"sleep {marker} &\nsleep {marker}\nwait\n"
    return shell_task("long", script), marker


def test_cancel_from_another_process_kills_the_whole_group(tui: Tui) -> None:
    long, marker = _long_task(tui)
    release = tui.dir / "release"
    # `keeper` keeps the engine busy until the test has seen the cancel's effects.
    keeper = shell_task("keeper", f"while [ ! -e '{release}' ]; do sleep 0.02; done")
    f = write_tasks(tui.dir / "long.yaml", [long, keeper])
    run = tui.popen("run", str(f))

    wait_until(lambda: tui.state_of("long") == "RUNNING", "task RUNNING", proc=run)
    wait_until(lambda: len(marker_processes(marker)) >= 3, "sleeps started", proc=run)

    res = tui("cancel", "long")
    assert res.returncode == 0, str(res)
    assert "cancelled long" in res.stdout
    task = tui.by_name()["long"]
    assert task["state"] == "CANCELLED"
    assert "cancelled by user" in task["reason"]
    assert marker_processes(marker) == []  # script, child and background grandchild
    assert tui.state_of("keeper") == "RUNNING"

    release.touch()
    out, errs = run.communicate(timeout=60)
    assert run.returncode == 1, (out, errs)  # not every task completed
    assert "Traceback" not in out + errs
    assert "→ cancelled" in out
    assert tui.state_of("keeper") == "COMPLETED"


def test_cancel_of_the_last_running_task_is_confirmed(tui: Tui) -> None:
    long, marker = _long_task(tui)
    f = write_tasks(tui.dir / "long.yaml", long)
    run = tui.popen("run", str(f))
    wait_until(lambda: len(marker_processes(marker)) >= 3, "sleeps started", proc=run)

    cancel = tui.popen("cancel", "long")
    out, errs = run.communicate(timeout=60)
    assert run.returncode == 1, (out, errs)
    assert tui.state_of("long") == "CANCELLED"
    assert marker_processes(marker) == []
    c_out, c_err = cancel.communicate(timeout=60)
    assert "Traceback" not in c_out + c_err
    assert cancel.returncode == 0, c_err
    assert "cancelled long" in c_out


def test_cancel_a_pending_task_cancels_its_dependents(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "t.yaml",
        [shell_task("first", "echo 1"), shell_task("second", "echo 2", depends_on=["first"])],
    )
    run = tui.popen("run", str(f), "--manual-approve")
    wait_until(lambda: tui.state_of("second") == "PENDING", "tasks stored", proc=run)
    res = tui("cancel", "first")
    assert res.returncode == 0, str(res)
    assert "cancelled first" in res.stdout
    out, errs = run.communicate(timeout=60)
    assert run.returncode == 1, (out, errs)
    tasks = tui.by_name()
    assert tasks["first"]["state"] == "CANCELLED"
    assert tasks["second"]["state"] == "CANCELLED" and "first" in tasks["second"]["reason"]


def test_retry_without_engine_queues_then_run_continues_it(tui: Tui) -> None:
    flag = tui.dir / "fixed"
    f = write_tasks(
        tui.dir / "t.yaml",
        shell_task("needs-fix", f"test -e '{flag}' && echo 'now it works'"),
    )
    assert tui("run", str(f)).returncode == 1
    assert tui.state_of("needs-fix") == "FAILED"

    flag.touch()
    res = tui("retry", "needs-fix")
    assert res.returncode == 0, str(res)
    assert "needs-fix" in res.stdout
    assert [t["name"] for t in tui.ls("--state", "QUEUED")] == ["needs-fix"]
    row = next(ln for ln in tui("ls").stdout.splitlines() if " needs-fix " in ln)
    assert row.split()[2] == "queued", row

    res = tui("run")
    assert res.returncode == 0, str(res)
    assert "running → done" in " ".join(res.stdout.split())
    task = tui.by_name()["needs-fix"]
    assert task["state"] == "COMPLETED" and task["attempts"] == 2
    assert tui("logs", "needs-fix", "--stream", "stdout").stdout == "now it works\n"


def test_retry_refuses_a_task_whose_dependency_failed(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "t.yaml",
        [shell_task("base", "exit 1"), shell_task("top", "echo top", depends_on=["base"])],
    )
    assert tui("run", str(f)).returncode == 1
    res = tui("retry", "top")
    assert res.returncode == 1
    assert "base" in res.stderr
    assert tui.state_of("top") == "CANCELLED"


def test_approve_lets_a_manual_task_run(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", shell_task("gated", "echo approved-and-ran"))
    run = tui.popen("run", str(f), "--manual-approve")
    wait_until(lambda: tui.state_of("gated") == "PENDING", "task stored", proc=run)
    assert tui.by_name()["gated"]["attempts"] == 0
    assert [to for _, name, _, to, _ in tui.transitions() if name == "gated"] == []
    assert run.poll() is None, "tui run ended while its task still waits for approval"

    res = tui("approve", "gated")
    assert res.returncode == 0, str(res)
    assert "approved gated" in res.stdout

    out, errs = run.communicate(timeout=60)
    assert run.returncode == 0, (out, errs)
    assert "Traceback" not in out + errs
    assert tui.state_of("gated") == "COMPLETED"
    assert tui("logs", "gated").stdout == "approved-and-ran\n"
    # Approving again is refused with a reason.
    again = tui("approve", "gated")
    assert again.returncode == 1 and "gated is done" in again.stderr
