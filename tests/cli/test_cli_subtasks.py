"""Subtasks (issue 12) through the real `tui` command: nested `subtasks:` under
`completion: all | any`, the parent waiting in BLOCKED, `any` cancelling (and killing) the
rest, a failed child failing an `all` parent, children listed under their parent."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks


def transitions_of(tui: Tui, name: str) -> list[tuple[str | None, str]]:
    return [(src, dst) for _, n, src, dst, _ in tui.transitions() if n == name]


def test_completion_all_waits_for_every_child_in_dependency_order(tui: Tui, tmp_path: Path) -> None:
    f = write_tasks(
        tmp_path / "all.yaml",
        [
            {
                "name": "research",
                "id": "research",
                "subtasks": [
                    # papers depends on its sibling by its short name.
                    shell_task("papers", "test -f web.done && echo papers", depends_on="web"),
                    shell_task("web", "touch web.done; echo web"),
                ],
            },
            shell_task("report", "echo report", depends_on="research"),
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert {n: t["state"] for n, t in tasks.items()} == {
        "research": "COMPLETED",
        "research.web": "COMPLETED",
        "research.papers": "COMPLETED",
        "report": "COMPLETED",
    }
    # ids are qualified by the parent's; the parent's result gathers its children's.
    assert tasks["research.web"]["id"] == "research.web"
    assert tasks["research.web"]["parent_task_id"] == "research"
    assert tasks["research"]["result"] == {"papers": "papers", "web": "web"}
    # The parent waited in BLOCKED, ran nothing itself, and completed after both children.
    assert transitions_of(tui, "research") == [
        ("PENDING", "BLOCKED"),
        ("BLOCKED", "COMPLETED"),
    ]
    order = [(n, dst) for _, n, _, dst, _ in tui.transitions() if dst == "COMPLETED"]
    assert order.index(("research.papers", "COMPLETED")) < order.index(("research", "COMPLETED"))
    assert order.index(("research", "COMPLETED")) < order.index(("report", "COMPLETED"))
    # `tui ls` shows the children under their parent, indented, by their own names.
    lines = tui("ls").stdout.splitlines()[1:]
    names = [line[10:35].rstrip() for line in lines]
    assert names == ["research", "  papers", "  web", "report"]


def test_completion_any_completes_on_the_first_and_kills_the_rest(tui: Tui, tmp_path: Path) -> None:
    marker = tui.marker()
    # slow starts a grandchild of its own: cancelling it must end the whole process group.
    slow = f"bash -c 'sleep 600 # {marker}' & touch slow.started; wait"
    f = write_tasks(
        tmp_path / "any.yaml",
        [
            {
                "name": "race",
                "completion": "any",
                "subtasks": [
                    shell_task("slow", slow),
                    # fast finishes only once slow's process is up: the cancel has a run to kill.
                    shell_task(
                        "fast", "while [ ! -f slow.started ]; do sleep 0.05; done; echo winner"
                    ),
                ],
            },
            shell_task("after", "echo after", depends_on="race"),
        ],
    )
    res = tui("run", str(f))
    # The children the parent cancelled are part of a plan that finished: exit 0.
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["race"]["state"] == "COMPLETED"
    assert tasks["race"]["result"] == "winner"
    assert tasks["race.fast"]["state"] == "COMPLETED"
    assert tasks["race.slow"]["state"] == "CANCELLED"
    assert "subtask race.fast done (completion: any)" in tasks["race.slow"]["reason"]
    assert tasks["after"]["state"] == "COMPLETED"
    assert marker_processes(marker) == []


def test_a_failed_child_fails_an_all_parent_and_cancels_its_dependents(
    tui: Tui, tmp_path: Path
) -> None:
    marker = tui.marker()
    f = write_tasks(
        tmp_path / "fail.yaml",
        [
            {
                "name": "build",
                "subtasks": [
                    shell_task("hang", f"touch hang.started; sleep 600 # {marker}"),
                    shell_task(
                        "broken", "while [ ! -f hang.started ]; do sleep 0.05; done; exit 3"
                    ),
                    shell_task("after-broken", "echo never", depends_on="broken"),
                ],
            },
            shell_task("ship", "echo never", depends_on="build"),
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    states = {n: t["state"] for n, t in tui.by_name().items()}
    assert states == {
        "build": "FAILED",
        "build.hang": "CANCELLED",
        "build.broken": "FAILED",
        "build.after-broken": "CANCELLED",
        "ship": "CANCELLED",
    }
    assert tui.by_name()["build"]["reason"] == "subtask build.broken ended failed"
    assert marker_processes(marker) == []


def test_a_skipped_group_skips_its_children(tui: Tui, tmp_path: Path) -> None:
    f = write_tasks(
        tmp_path / "skip.yaml",
        [
            shell_task("gate", "echo no"),
            {
                "name": "group",
                "depends_on": "gate",
                "when": "needs.gate.result == 'yes'",
                "subtasks": [shell_task("inner", "echo ran > inner.ran")],
            },
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    states = {n: t["state"] for n, t in tui.by_name().items()}
    assert states == {"gate": "COMPLETED", "group": "SKIPPED", "group.inner": "SKIPPED"}
    assert not (tmp_path / "inner.ran").exists()


def test_validate_names_file_line_field_and_fix_for_bad_subtasks(tui: Tui, tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        """\
tasks:
  - name: empty
    subtasks: []
  - name: both
    agent: {type: shell, instructions: "echo"}
    subtasks:
      - name: a
        agent: {type: shell, instructions: "echo"}
  - name: mode
    completion: some
    subtasks:
      - name: b
        depends_on: nowhere
        agent: {type: shell, instructions: "echo"}
      - just text
""",
        encoding="utf-8",
    )
    res = tui("validate", str(f), db=False)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert f"{f}:3" in out and "tasks[0].subtasks" in out and "non-empty list" in out
    assert f"{f}:6" in out and "runs no agent itself" in out and "move its agent:" in out
    assert f"{f}:10" in out and "completion must be one of all, any" in out
    assert f"{f}:13" in out and "tasks[2].subtasks[0].depends_on" in out and "nowhere" in out
    assert f"{f}:15" in out and "each subtask must be a mapping" in out


def test_retrying_a_failed_child_then_its_parent_completes_the_group(
    tui: Tui, tmp_path: Path
) -> None:
    flag, ran = tmp_path / "fixed", tmp_path / "ran"
    f = write_tasks(
        tmp_path / "retry.yaml",
        [
            {
                "name": "build",
                "subtasks": [
                    shell_task("ok", "echo ok"),
                    # After ok: else flaky may fail first and the group cancels ok with it.
                    shell_task("flaky", f"test -f {flag}", depends_on="ok"),
                ],
            },
            shell_task("ship", f"echo shipped > {ran}", depends_on="build"),
        ],
    )
    assert tui("run", str(f)).returncode == 1
    assert tui.state_of("build") == "FAILED" and tui.state_of("ship") == "CANCELLED"
    flag.touch()
    assert tui("retry", "build.flaky").returncode == 0
    assert tui("retry", "build").returncode == 0
    res = tui("run")
    assert res.returncode == 0, str(res)
    states = {n: t["state"] for n, t in tui.by_name().items()}
    assert states["build"] == "COMPLETED" and states["build.flaky"] == "COMPLETED"
    # The parent ran nothing of its own: it waited on its children again.
    assert ("build", "RUNNING", "BLOCKED") in [(n, a, b) for _, n, a, b, _ in tui.transitions()]


def test_kill_9_mid_group_then_the_next_run_settles_it_from_the_stored_children(
    tui: Tui, tmp_path: Path
) -> None:
    """The parent's counts of its children are rebuilt from the store after a crash: the
    children that completed before it count, and none of them runs again."""
    marker = tui.marker()
    gate = tmp_path / "go"
    held = f": {marker}; until [ -e {gate} ]; do sleep 0.05; done; echo b"
    f = write_tasks(
        tmp_path / "g.yaml",
        [
            {
                "name": "grp",
                "id": "grp",
                "subtasks": [
                    shell_task("a", "echo a"),
                    shell_task("b", held),
                    shell_task("c", "echo c", depends_on="a"),
                ],
            }
        ],
    )
    run = tui.popen("run", str(f))
    wait_until(
        lambda: tui.state_of("grp.c") == "COMPLETED" and tui.state_of("grp.b") == "RUNNING",
        "a and c done, b running",
        proc=run,
    )
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    assert tui.state_of("grp") == "BLOCKED"

    gate.touch()
    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["grp"]["state"] == "COMPLETED", tasks["grp"]
    assert tasks["grp"]["result"] == {"a": "a", "b": "b", "c": "c"}
    for name in ("grp.a", "grp.c"):
        started = [t for t in transitions_of(tui, name) if t[1] == "RUNNING"]
        assert len(started) == 1, (name, started)
    assert marker_processes(marker) == []
