"""foreach (issue 12) through the real `tui` command: a 50-item result fanned out under
max_parallel and fanned in, items reaching scripts as variables only, validation, and a
kill -9 of the engine in the middle of a foreach."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks

LEGAL_MID_RUN = {"PENDING", "QUEUED", "RUNNING", "COMPLETED"}


def test_foreach_over_a_50_item_result_with_max_parallel(tui: Tui, tmp_path: Path) -> None:
    log = tmp_path / "log"
    items = [f"item {i}" for i in range(49)] + ["$(touch pwned)"]
    f = write_tasks(
        tmp_path / "map.yaml",
        [
            shell_task("list", f"echo '{json.dumps(items)}'"),
            {
                **shell_task(
                    "each",
                    # Each child logs its start and end on one clock; {{item}} reaches the
                    # script as $TUI_ITEM, never as shell text.
                    f'echo "$(date +%s%N) start {{{{index}}}}" >> {log}; echo "got {{{{item}}}}"; '
                    f'echo "$(date +%s%N) end {{{{index}}}}" >> {log}',
                    depends_on="list",
                ),
                "foreach": "{{needs.list.result}}",
                "max_parallel": 3,
            },
            shell_task("fan-in", f'echo "$(date +%s%N) fan-in" >> {log}', depends_on="each"),
        ],
    )
    res = tui("run", str(f), timeout=180)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    children = [t for t in tasks.values() if t["parent_task_id"] == tasks["each"]["id"]]
    assert len(children) == 50 and all(c["state"] == "COMPLETED" for c in children)
    assert tasks["each"]["state"] == "COMPLETED"
    # The parent's result is its children's, in item order.
    assert tasks["each"]["result"] == [f"got {item}" for item in items]
    assert not (tmp_path / "pwned").exists()
    events = sorted(line.split() for line in log.read_text().splitlines())
    running = peak = 0
    for _, what, *_ in events:
        running += {"start": 1, "end": -1}.get(what, 0)
        peak = max(peak, running)
    assert 1 <= peak <= 3, events
    starts = [int(e[2]) for e in events if e[1] == "start"]
    assert sorted(starts) == list(range(50))  # each item ran once
    assert events[-1][1] == "fan-in"  # after every child ended


def test_a_literal_list_and_index_in_a_prompt_free_script(tui: Tui, tmp_path: Path) -> None:
    f = write_tasks(
        tmp_path / "lit.yaml",
        [{**shell_task("greet", 'echo "{{index}}:{{item}}"'), "foreach": ["a b", {"k": 1}]}],
    )
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    assert tui.by_name()["greet"]["result"] == ["0:a b", '1:{"k": 1}']


def test_foreach_over_something_not_a_list_fails_naming_it(tui: Tui, tmp_path: Path) -> None:
    f = write_tasks(
        tmp_path / "bad.yaml",
        [
            shell_task("scalar", "echo 42"),
            {
                **shell_task("each", "echo {{item}}", depends_on="scalar"),
                "foreach": "{{needs.scalar.result}}",
            },
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    each = tui.by_name()["each"]
    assert each["state"] == "FAILED"
    assert "{{needs.scalar.result}} is int, not a JSON array" in each["reason"]


def test_validate_names_file_line_field_and_fix_for_bad_foreach(tui: Tui, tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        """\
tasks:
  - name: a
    foreach: "not a reference"
    agent: {type: shell, instructions: "echo {{item}}"}
  - name: b
    foreach: "{{needs.nowhere.result}}"
    agent: {type: shell, instructions: "echo {{item}}"}
  - name: c
    agent: {type: shell, instructions: "echo {{item}}"}
  - name: d
    foreach: [1]
    max_parallel: -1
    agent: {type: shell, instructions: "echo {{item}}"}
""",
        encoding="utf-8",
    )
    res = tui("validate", str(f), db=False)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert f"{f}:3" in out and "tasks[0].foreach" in out and "one {{needs.X.result}}" in out
    assert f"{f}:6" in out and "tasks[1].foreach" in out and "nowhere" in out
    assert f"{f}:9" in out and "{{item}} without foreach:" in out
    assert f"{f}:12" in out and "tasks[3].max_parallel" in out


def test_kill_9_mid_foreach_recovers_without_re_expanding_or_rerunning(
    tui: Tui, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    marker = tui.marker()
    gate = tmp_path / "gate"
    # Item 6 holds its slot (the first time only) until the engine is dead (the test opens
    # the gate: the next engine adopts it); the other items go through the second slot.
    script = (
        f'if [ "$TUI_INDEX" = 6 ] && [ ! -f hold.started ]; then touch hold.started; '
        f"while [ ! -e {gate} ]; do sleep 0.02; done # {marker}\nfi\n"
        f'echo "ran $TUI_INDEX" >> {runs}'
    )
    f = write_tasks(
        tmp_path / "crash.yaml",
        [
            {**shell_task("each", script), "foreach": list(range(12)), "max_parallel": 2},
            shell_task("after", "echo after", depends_on="each"),
        ],
    )
    run = tui.popen("run", str(f))
    wait_until(
        lambda: (tmp_path / "hold.started").exists() and tui.state_of("each[6]") == "RUNNING",
        "item 6 running",
        proc=run,
    )
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)

    states = dict(tui.sql("SELECT name, state FROM tasks"))
    children = {n: s for n, s in states.items() if n.startswith("each[")}
    assert len(children) == 12 and set(children.values()) <= LEGAL_MID_RUN, states
    assert states["each"] == "BLOCKED" and states["after"] == "PENDING"
    assert list(children.values()).count("RUNNING") <= 2
    done_before = {n for n, s in children.items() if s == "COMPLETED"}

    gate.touch()
    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert len([n for n in tasks if n.startswith("each[")]) == 12  # not expanded again
    assert all(t["state"] == "COMPLETED" for t in tasks.values()), tasks
    # Every item ran to its end, once: one that had COMPLETED before the kill never ran
    # again, one running at the kill was adopted by the next engine.
    ran = runs.read_text().splitlines()
    assert sorted(ran) == sorted(f"ran {i}" for i in range(12))
    moves = [(n, to) for _, n, _, to, _ in tui.transitions()]
    for name in done_before:
        assert ran.count(f"ran {name[5:-1]}") == 1, name
        assert moves.count((name, "RUNNING")) == 1, name
    assert moves.count(("each", "BLOCKED")) == 1
    assert marker_processes(marker) == []
