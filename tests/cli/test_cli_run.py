"""`tui run FILE`: a DAG runs in dependency order, failures cancel dependents, ids are unique."""

from __future__ import annotations

import json
import os
import subprocess

from tests.cli.cli_support import RUN_TIMEOUT, TUI, Tui, shell_task, write_tasks

# Fan-out after `fetch`, fan-in at `ship`; `lint` also waits on `gen`.
DAG = [
    shell_task("fetch", "echo fetched"),
    shell_task("gen", "echo generated"),
    shell_task("lint", "echo lint ok", depends_on=["fetch", "gen"]),
    shell_task("unit", "echo unit ok; echo '3 passed' >&2", depends_on=["fetch"]),
    shell_task("docs", "echo docs ok", depends_on=["fetch"], priority="low"),
    shell_task("ship", "echo shipped", depends_on=["lint", "unit", "docs"]),
]
DEPS = {t["name"]: t.get("depends_on", []) for t in DAG}


def test_dag_runs_in_dependency_order(tui: Tui) -> None:
    f = write_tasks(tui.dir / "dag.yaml", DAG)
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)

    tasks = tui.by_name()
    assert {n: t["state"] for n, t in tasks.items()} == {n: "COMPLETED" for n in DEPS}
    assert all(t["attempts"] == 1 for t in tasks.values())

    log = tui.transitions()
    # One printed line per transition, naming the task and its move in the task list's
    # words: first each submission ("new → pending", journalled apart from the
    # `transitions` view), then the state changes in the order the view has them.
    lines = [" ".join(ln.split()) for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) == len(DEPS) + len(log), str(res)
    for line, name in zip(lines, DEPS, strict=False):
        assert f" {name} new → pending submitted" in line, line
    words = {"PENDING": "pending", "QUEUED": "queued", "RUNNING": "running", "COMPLETED": "done"}
    for line, (_, name, frm, to, _) in zip(lines[len(DEPS) :], log, strict=True):
        assert frm is not None, (name, to)  # only the submission has none, printed above
        assert f" {name} {words[frm]} → {words[to]}" in line, (line, name, to)
    assert not [ln for ln in lines if "COMPLETED" in ln or "RUNNING" in ln], lines

    first: dict[
        tuple[str, str], int
    ] = {}  # (name, state) -> id of the first transition into that state
    for ev_id, name, _frm, to, _ in log:
        first.setdefault((name, to), ev_id)
    for name, deps in DEPS.items():
        # Each task went PENDING → QUEUED → RUNNING → COMPLETED, in that order.
        chain = [first[(name, s)] for s in ("QUEUED", "RUNNING", "COMPLETED")]
        assert chain == sorted(chain), name
        for dep in deps:
            assert first[(dep, "COMPLETED")] < first[(name, "QUEUED")], (
                f"{name} was queued before its dependency {dep} completed"
            )
    # Output was captured per task and per stream.
    assert tui("logs", "ship").stdout == "shipped\n"
    assert tui("logs", "unit", "--stream", "stderr").stdout == "3 passed\n"


def test_json_prints_one_object_per_transition(tui: Tui) -> None:
    f = write_tasks(tui.dir / "dag.yaml", DAG)
    res = tui("run", str(f), "--json")
    assert res.returncode == 0, str(res)
    events = [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()]
    assert len(events) == len(DEPS) + len(tui.transitions())  # submissions + state changes
    for ev in events:
        assert {"from", "to", "name"} <= ev.keys(), ev
        assert ev["name"] in DEPS
    for name in DEPS:
        mine = [(ev["from"], ev["to"]) for ev in events if ev["name"] == name]
        assert mine == [
            (None, "PENDING"),
            ("PENDING", "QUEUED"),
            ("QUEUED", "RUNNING"),
            ("RUNNING", "COMPLETED"),
        ], name


def test_failure_exits_1_and_cancels_dependents(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "fail.yaml",
        [
            shell_task("setup", "echo ready"),
            shell_task("compile", "echo 'syntax error' >&2; exit 3", depends_on=["setup"]),
            shell_task("test", "echo never", depends_on=["compile"]),
            shell_task("deploy", "echo never", depends_on=["test", "setup"]),
            shell_task("independent", "echo fine"),
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    tasks = tui.by_name()
    assert tasks["setup"]["state"] == "COMPLETED"
    assert tasks["independent"]["state"] == "COMPLETED"
    assert tasks["compile"]["state"] == "FAILED"
    assert "exit code 3" in tasks["compile"]["reason"]
    assert tasks["test"]["state"] == "CANCELLED"
    assert "compile" in tasks["test"]["reason"], tasks["test"]
    assert tasks["deploy"]["state"] == "CANCELLED"
    assert "test" in tasks["deploy"]["reason"], tasks["deploy"]
    # The cancelled dependents never ran.
    assert tasks["test"]["attempts"] == 0 and tasks["deploy"]["attempts"] == 0
    assert tui("logs", "test").stdout == ""
    assert "syntax error" in tui("logs", "compile", "--stream", "stderr").stdout
    # `ls --json` carries the documented fields.
    for t in tasks.values():
        assert {"id", "name", "state", "attempts", "cost_usd", "depends_on", "reason"} <= t.keys()
    assert tasks["test"]["depends_on"] == [tasks["compile"]["id"]]


IDS = [
    shell_task("one", "echo 1", id="job-1"),
    shell_task("two", "echo 2", id="job-2", depends_on=["job-1"]),
]


def test_same_explicit_ids_twice_are_refused(tui: Tui) -> None:
    f = write_tasks(tui.dir / "ids.yaml", IDS)
    assert tui("run", str(f)).returncode == 0
    before = tui.sql("SELECT COUNT(*) FROM tasks")[0][0]
    events_before = tui.sql("SELECT COUNT(*) FROM events")[0][0]

    res = tui("run", str(f))
    assert res.returncode != 0, str(res)
    assert "already stored" in res.stderr and "job-1" in res.stderr, str(res)
    assert tui.sql("SELECT COUNT(*) FROM tasks")[0][0] == before == 2
    assert tui.sql("SELECT COUNT(*) FROM events")[0][0] == events_before


def test_refused_duplicate_does_not_run_other_queued_tasks(tui: Tui) -> None:
    """A refused file must leave the database as it was, even with work waiting in it."""
    marker = tui.dir / "ran-again"
    f = write_tasks(
        tui.dir / "ids.yaml",
        [shell_task("flaky", f"touch '{marker}'; exit 1", id="job-1")],
    )
    assert tui("run", str(f)).returncode == 1
    marker.unlink()
    assert tui("retry", "flaky").returncode == 0
    assert tui.state_of("flaky") == "QUEUED"
    runs_before = tui.sql("SELECT COUNT(*) FROM runs")[0][0]

    res = tui("run", str(f))
    assert res.returncode != 0, str(res)
    assert "already stored" in res.stderr, str(res)
    assert tui.state_of("flaky") == "QUEUED"
    assert tui.sql("SELECT COUNT(*) FROM runs")[0][0] == runs_before
    assert not marker.exists(), "the refused run started the queued task"


def test_done_comes_after_every_transition_when_stdout_and_stderr_share_a_pipe(
    tui: Tui,
) -> None:
    """`tui run f.yaml 2>&1 | tee log`: the summary on stderr is the last line, after the
    transitions on stdout (which a pipe would otherwise hold back until exit)."""
    f = write_tasks(
        tui.dir / "t.yaml",
        [shell_task("a", "echo hi"), shell_task("b", "echo ho", depends_on="a")],
    )
    proc = subprocess.run(
        [*TUI, "run", str(f), "--db", str(tui.db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=tui.dir,
        timeout=RUN_TIMEOUT,
        # As a user's shell has it: stdout into a pipe is block-buffered.
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout
    assert lines[-1] == "2 tasks: 2 done", lines
    assert sum("running → done" in ln for ln in lines[:-1]) == 2, lines
