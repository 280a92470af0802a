"""until: loops (issue 12) through the real `tui` command: stopping on the condition with
the previous result passed along, stopping at max_iterations, validation."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks


def test_until_stops_on_its_condition_passing_the_previous_result(tui: Tui, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    f = write_tasks(
        tmp_path / "loop.yaml",
        [
            {
                # {{previous.result}} reaches the script as $TUI_PREVIOUS_RESULT.
                **shell_task(
                    "count",
                    f'p={{{{previous.result}}}}; echo "saw [$p]" >> {runs}; '
                    "echo $(( ${p:-0} + 1 ))",
                ),
                "until": "int(result) >= 3 and iteration == 3",
                "max_iterations": 10,
            },
            shell_task("after", "echo got {{needs.count.result}}", depends_on="count"),
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["count"]["state"] == "COMPLETED" and tasks["count"]["result"] == "3"
    assert (
        tasks["count"]["reason"] == "until: int(result) >= 3 and iteration == 3 holds (iteration 3)"
    )
    assert runs.read_text().splitlines() == ["saw []", "saw [1]", "saw [2]"]
    # The dependent ran once, on the last iteration's result only.
    assert tasks["after"]["result"] == "got 3"
    moves = [(n, a, b) for _, n, a, b, _ in tui.transitions()]
    assert moves.count(("count", "RUNNING", "QUEUED")) == 2
    assert moves.count(("after", "QUEUED", "RUNNING")) == 1


def test_until_stops_at_max_iterations(tui: Tui, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    f = write_tasks(
        tmp_path / "bounded.yaml",
        [
            {
                **shell_task("poll", f"echo ran >> {runs}; echo not-yet"),
                "until": "result == 'ready'",
                "max_iterations": 4,
            }
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    poll = tui.by_name()["poll"]
    assert poll["state"] == "COMPLETED" and poll["result"] == "not-yet"
    assert poll["reason"] == "stopped at max_iterations (4); until: result == 'ready' is false"
    assert runs.read_text().splitlines() == ["ran"] * 4


def test_validate_names_file_line_field_and_fix_for_bad_until(tui: Tui, tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        """\
tasks:
  - name: a
    until: output == 1
    agent: {type: shell, instructions: "echo"}
  - name: b
    agent: {type: shell, instructions: "echo {{previous.result}}"}
  - name: c
    until: result == 1
    max_iterations: 0
    agent: {type: shell, instructions: "echo"}
""",
        encoding="utf-8",
    )
    res = tui("validate", str(f), db=False)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert f"{f}:3" in out and "tasks[0].until" in out and "unknown name 'output'" in out
    assert f"{f}:6" in out and "{{previous.result}} without until:" in out
    assert f"{f}:9" in out and "tasks[2].max_iterations" in out


def test_kill_9_mid_loop_repeats_no_completed_iteration(tui: Tui, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    marker = tui.marker()
    gate = tmp_path / "gate"
    # Iteration 2 hangs (the first time only) until the engine is dead (the test opens the
    # gate: the next engine adopts it).
    script = (
        "p={{previous.result}}; n=$(( ${p:-0} + 1 ))\n"
        f'if [ "$n" = 2 ] && [ ! -f hang.started ]; then touch hang.started; '
        f"while [ ! -e {gate} ]; do sleep 0.02; done # {marker}\n"
        "fi\n"
        f'echo "ran $n" >> {runs}; echo $n'
    )
    f = write_tasks(
        tmp_path / "loop.yaml",
        [{**shell_task("loop", script), "until": "int(result) >= 3", "max_iterations": 5}],
    )
    run = tui.popen("run", str(f))
    wait_until(lambda: (tmp_path / "hang.started").exists(), "iteration 2 running", proc=run)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    assert tui.state_of("loop") in ("RUNNING", "QUEUED")

    gate.touch()
    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    loop = tui.by_name()["loop"]
    assert loop["state"] == "COMPLETED" and loop["result"] == "3"
    # Iteration 1 had completed: it did not run again; the interrupted one ran to its end once.
    assert runs.read_text().splitlines() == ["ran 1", "ran 2", "ran 3"]
    assert marker_processes(marker) == []
