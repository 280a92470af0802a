"""`tui export` / `tui import` with real databases and the real `tui` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_support import Tui, assert_no_traceback, shell_task, write_tasks


@pytest.fixture
def ran(tui: Tui) -> Tui:
    """A database holding a pipeline (build -> test, test printing output and a JSON result,
    lint failing) and an unrelated task."""
    tasks = [
        shell_task("build", "echo built; echo warn >&2"),
        shell_task(
            "test",
            "for i in 1 2 3; do echo line $i; done; echo '{\"passed\": 3}'",
            depends_on=["build"],
            output_format={"type": "json", "on_parse_error": "keep"},
        ),
        shell_task("lint", "echo bad; exit 4", depends_on=["build"]),
        shell_task("other", "echo elsewhere"),
    ]
    res = tui("run", str(write_tasks(tui.dir / "p.yaml", tasks)))
    assert res.returncode == 1, str(res)  # lint failed
    return tui


def other_db(tui: Tui, name: str) -> list[str]:
    return ["--db", str(tui.dir / name)]


def ls(tui: Tui, *db: str) -> dict[str, dict[str, Any]]:
    res = tui("ls", "--json", *db, db=not db)
    assert res.returncode == 0, str(res)
    return {t["name"]: t for t in json.loads(res.stdout)}


def records(path: Path) -> list[dict[str, Any]]:
    """The file's rows without what import gives anew (row ids, run ids, submit order)."""
    out = []
    for line in path.read_text().splitlines()[1:-1]:
        rec = json.loads(line)
        row = {k: v for k, v in rec["row"].items() if k not in ("id", "run_id", "submit_seq")}
        if rec["type"] in ("task", "question"):
            row["id"] = rec["row"]["id"]
        for k in ("pid", "pgid", "proc_start"):
            row.pop(k, None)
        out.append({"type": rec["type"], "row": row})
    return out


def test_a_run_round_trips_into_another_database(ran: Tui) -> None:
    tui = ran
    path = tui.dir / "run.jsonl"
    res = tui("export", "test", str(path))
    assert res.returncode == 0, str(res)
    assert res.stdout.startswith("exported 3 tasks,")  # build, test, lint; not "other"

    b = other_db(tui, "b.db")
    res = tui("import", str(path), *b, db=False)
    assert res.returncode == 0, str(res)
    assert res.stdout.startswith("imported 3 tasks,")
    before, after = ls(tui), ls(tui, *b)
    assert set(after) == {"build", "test", "lint"}
    for name in after:
        for key in ("id", "state", "reason", "attempts", "result", "priority", "depends_on"):
            assert after[name][key] == before[name][key], (name, key)
    # on_parse_error: keep kept the whole text (not JSON) as the result; it came along.
    assert after["test"]["result"] == 'line 1\nline 2\nline 3\n{"passed": 3}'
    # Output and the journal came along.
    logs = tui("logs", "test", *b, db=False)
    assert logs.stdout.splitlines() == tui("logs", "test").stdout.splitlines()
    assert "line 2" in logs.stdout
    assert "warn" in tui("logs", "build", "--stream", "stderr", *b, db=False).stdout
    # A copy exported again from the other database holds the same rows.
    again = tui.dir / "again.jsonl"
    assert tui("export", "test", str(again), *b, db=False).returncode == 0
    assert records(again) == records(path)


def test_all_round_trips_and_a_second_import_is_refused_whole(ran: Tui) -> None:
    tui = ran
    path = tui.dir / "all.jsonl"
    assert tui("export", "--all", str(path)).returncode == 0
    b = other_db(tui, "b.db")
    assert tui("import", str(path), *b, db=False).returncode == 0
    assert set(ls(tui, *b)) == {"build", "test", "lint", "other"}
    again = tui.dir / "again.jsonl"
    assert tui("export", "--all", str(again), *b, db=False).returncode == 0
    assert records(again) == records(path)

    res = tui("import", str(path), *b, db=False)
    assert res.returncode == 1, str(res)
    assert_no_traceback(res)
    assert "4 id(s) of" in res.stderr and "are already in this database (task " in res.stderr
    assert "nothing was imported" in res.stderr
    assert len(ls(tui, *b)) == 4
    third = tui.dir / "third.jsonl"
    assert tui("export", "--all", str(third), *b, db=False).returncode == 0
    assert records(third) == records(again)  # not one row more


def corrupt(path: Path, how: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    if how == "cut":
        path.write_text("".join(lines[:-1]))
    elif how == "garbage":
        lines[3] = "{not json\n"
        path.write_text("".join(lines))
    elif how == "header":
        path.write_text("".join(lines[1:]))
    elif how == "huge":
        with path.open("w") as f:
            f.write(lines[0])
            f.write('{"type": "output", "row": {"text": "' + "x" * (33 << 20) + '"}}\n')
    elif how == "bad-spec":
        rec = json.loads(lines[1])
        rec["row"]["spec"] = '{"name": "x"}'
        lines[1] = json.dumps(rec) + "\n"
        path.write_text("".join(lines))


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("cut", "no end line after line"),
        ("garbage", ":4: not JSON"),
        ("header", ":1: not a tui export file"),
        ("huge", ":2: line longer than 32 MB"),
        ("bad-spec", ":2: task "),
    ],
)
def test_bad_input_is_a_clear_error_and_stores_nothing(ran: Tui, how: str, message: str) -> None:
    tui = ran
    path = tui.dir / "all.jsonl"
    assert tui("export", "--all", str(path)).returncode == 0
    corrupt(path, how)
    b = other_db(tui, "b.db")
    assert tui("import", str(tui.dir / "all.jsonl"), *b, db=False).returncode == 1
    res = tui("import", str(path), *b, db=False)
    assert res.returncode == 1, str(res)
    assert_no_traceback(res)
    assert message in res.stderr, res.stderr
    assert ls(tui, *b) == {}
    assert tui.sql("SELECT COUNT(*) FROM tasks") == [(4,)]  # the source is untouched


def test_export_usage_and_unknown_run(tui: Tui) -> None:
    write_tasks(tui.dir / "t.yaml", [shell_task("a", "true")])
    assert tui("run", str(tui.dir / "t.yaml")).returncode == 0
    res = tui("export", "--all", "x", "y")
    assert res.returncode == 2 and "usage: tui export --all FILE" in res.stderr
    res = tui("export", "nope", str(tui.dir / "o.jsonl"))
    assert res.returncode == 1 and "nope" in res.stderr, str(res)
    assert_no_traceback(res)
    assert not (tui.dir / "o.jsonl").exists()


def test_a_run_exported_mid_flight_carries_on_in_the_other_database(tui: Tui) -> None:
    """Checkpoint/restore: an engine killed mid-task, its database exported and imported
    elsewhere; `tui run` there ends the open run as interrupted and runs the task again."""
    import os
    import signal

    from tests.cli.cli_support import marker_processes, wait_until

    marker = tui.marker()
    script = (
        f"# {marker}\necho attempt $TUI_ATTEMPT\n"
        'if [ "$TUI_ATTEMPT" = 1 ]; then sleep 300; fi\necho finished'
    )
    f = write_tasks(tui.dir / "m.yaml", [shell_task("long", script)])
    run = tui.popen("run", str(f))
    wait_until(
        lambda: any(ln.text == "attempt 1" for ln in tui.output()), "its first line", proc=run
    )
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    for pid in marker_processes(marker):  # the dead engine's task, as a reboot would
        os.kill(pid, signal.SIGKILL)

    path = tui.dir / "checkpoint.jsonl"
    assert tui("export", "long", str(path)).returncode == 0
    b = other_db(tui, "b.db")
    assert tui("import", str(path), *b, db=False).returncode == 0
    assert ls(tui, *b)["long"]["state"] == "RUNNING"
    res = tui("run", *b, db=False, timeout=120)
    assert res.returncode == 0, str(res)
    long = ls(tui, *b)["long"]
    assert long["state"] == "COMPLETED" and long["attempts"] == 2, long
    logs = tui("logs", "long", *b, db=False).stdout
    assert "attempt 1" in logs and "attempt 2" in logs and "finished" in logs
