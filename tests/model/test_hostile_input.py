"""Hostile task files: each limit is a clear error naming the file and line, reached in well
under a second and under 100 MB, by the real `tui validate` too (never a crash or a hang)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.model.hostile_files import EXPECTED, HOSTILE, TASK
from tui.model.issues import TaskFileError
from tui.model.limits import MAX_FILE_BYTES
from tui.model.loader import load_task_files, load_task_text
from tui.model.task import STORED, Task

PEAK_RSS_MB = 100
CPU_SECONDS = 1.0  # CPU time, not wall time: other work on the machine does not count
HANG_GUARD = 60.0  # seconds before a `tui validate` is declared hung and killed


# Runs the command and writes its peak RSS (KB) to argv[1]. A child's maxrss starts from its
# parent's high-water mark (exec keeps it), so the child must come from this small process,
# not from pytest, whose own size would be measured.
MEASURE = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def run_measured(argv: list[str], cwd: Path) -> tuple[int, str, float]:
    """(exit code, output, peak RSS in MB) of the command, via getrusage(RUSAGE_CHILDREN)."""
    out, peak = cwd / "measured.out", cwd / "measured.rss"
    with open(out, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(peak), *argv],
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    try:
        code = proc.wait(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"{argv} hung for {HANG_GUARD:.0f}s")
    return code, out.read_text(errors="replace"), int(peak.read_text()) / 1024


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_limit_is_a_clear_error_at_once(name: str) -> None:
    started = time.process_time()
    with pytest.raises(TaskFileError) as refused:
        load_task_text(HOSTILE[name], f"{name}.yaml")
    assert time.process_time() - started < CPU_SECONDS
    [issue] = refused.value.issues
    assert EXPECTED[name] in issue.message
    assert issue.line is not None and issue.fix


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_tui_validate_refuses_it_in_bounded_memory(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(HOSTILE[name])
    code, output, peak_mb = run_measured(
        [sys.executable, "-m", "tui", "validate", str(path)], tmp_path
    )
    assert code == 2, output  # not 139 (segfault), 1 (traceback) or -9 (hung, killed)
    assert "Traceback" not in output
    assert re.search(rf"{re.escape(str(path))}:\d+: .*{re.escape(EXPECTED[name])}", output)
    assert peak_mb < PEAK_RSS_MB, f"peak RSS {peak_mb:.0f} MB"


def test_a_file_past_the_size_limit_is_not_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with open(big, "w") as f:
        f.write(TASK)
        f.write(("# padding\n" * 100_000) * (MAX_FILE_BYTES // 1_000_000 + 1))
    code, output, peak_mb = run_measured(
        [sys.executable, "-m", "tui", "validate", str(big)], tmp_path
    )
    assert code == 2 and "larger than 10,000,000 bytes" in output, output
    assert peak_mb < PEAK_RSS_MB
    endless = tmp_path / "endless.yaml"
    endless.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.yaml"  # opening it for reading would wait for a writer
    os.mkfifo(fifo)
    with pytest.raises(TaskFileError) as refused:
        load_task_files([endless, fifo])
    assert [(i.file, i.message) for i in refused.value.issues] == [
        (str(endless), "not a regular file"),
        (str(fifo), "not a regular file"),
    ]


def test_limits_leave_ordinary_files_alone() -> None:
    """Anchors, merge keys and a thousand tasks stay fine."""
    text = "tasks:\n" + "".join(
        f"  - name: t{i}\n    <<: &d{i} {{timeout: 10m, tags: [a]}}\n"
        f"    agent: {{type: shell, instructions: echo {i}}}\n"
        for i in range(1000)
    )
    assert len(load_task_text(text, "ok.yaml").tasks) == 1000
    shared = (
        "d: &d {type: shell, instructions: x}\n"
        "tasks: [{name: a, agent: *d}, {name: b, agent: *d}]\n"
    )
    with pytest.raises(TaskFileError, match="unknown top-level key 'd'"):
        load_task_text(shared, "shared.yaml")  # aliases work; the stray key is the error


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9" * 90, "longer than 2562047h47m16s"),
        ("'2562048h'", "longer than 2562047h47m16s"),
        ("'" + "9" * 5000 + "h'", "a duration of 5,001 characters"),
    ],
    ids=["90-digit-number", "past-go-limit", "5000-digit-text"],
)
def test_absurd_durations_are_errors(value: str, message: str) -> None:
    text = f"name: a\ntimeout: {value}\nagent: {{type: shell, instructions: x}}\n"
    with pytest.raises(TaskFileError, match=message):
        load_task_text(text, "t.yaml")
    ok = "name: a\ntimeout: 2562047h\nagent: {type: shell, instructions: x}\n"
    assert load_task_text(ok, "t.yaml").tasks[0].timeout == 2562047 * 3600


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("retry", "{max_attempts: " + "9" * 30 + "}", "retry.max_attempts must be <= 1000"),
        ("agent", "{type: shell, instructions: x, max_budget_usd: .inf}", "must be a number"),
    ],
    ids=["max-attempts", "infinite-budget"],
)
def test_absurd_numbers_are_errors(field: str, value: str, message: str) -> None:
    text = f"name: a\n{field}: {value}\n" + ("" if field == "agent" else TASK.split("\n", 1)[1])
    with pytest.raises(TaskFileError, match=message):
        load_task_text(text, "t.yaml")


@pytest.mark.parametrize(
    "bad",
    ["'two words'", '"line\\nbreak"', "'-leading-dash'", "'a/b'", "'x '", "'" + "a" * 129 + "'"],
)
def test_task_ids_are_a_documented_character_set(bad: str) -> None:
    text = f"id: {bad}\n{TASK}"
    with pytest.raises(TaskFileError, match="has characters an id may not have") as refused:
        load_task_text(text, "t.yaml")
    assert "letters, digits, '.', '_' and '-'" in str(refused.value)
    assert refused.value.issues[0].line == 1
    for good in ("build-1", "v2.release_candidate", "0b5c9a3e-1d2f-4c8a-9e7b-123456789abc"):
        [task] = load_task_text(f"id: {good}\n{TASK}", "t.yaml").tasks
        assert task.id == good


@pytest.mark.parametrize("value", ["7.88e-295", "1.0e-10", "'0.4ns'"])
def test_a_duration_below_a_nanosecond_is_not_stored_as_no_limit(value: str) -> None:
    """Found by the soak: stored as "0s", it read back as no limit at all."""
    text = f"name: a\ntimeout: {value}\nagent: {{type: shell, instructions: x}}\n"
    with pytest.raises(TaskFileError, match="at least 1ns, or 0 for no limit"):
        load_task_text(text, "t.yaml")


@pytest.mark.parametrize("value", ["0.1", "1.5", "'1.0000000004s'", "'2h3m4.5s'", "0.000001"])
def test_durations_read_back_as_they_were_stored(value: str) -> None:
    text = f"name: a\ntimeout: {value}\nagent: {{type: shell, instructions: x}}\n"
    [task] = load_task_text(text, "t.yaml").tasks
    again = Task.model_validate_json(task.model_dump_json(), context=STORED)
    assert again.timeout == task.timeout > 0


@pytest.mark.parametrize("given", ["vars: {n: .inf}", "vars: {n: -.inf}", "vars: {n: .nan}"])
def test_number_variables_are_finite(given: str) -> None:
    """inf was filled in as "inf" and stored as null: the task could not be read back."""
    text = (
        f"name: a\nvariables: [{{name: n, type: number}}]\n{given}\n"
        "agent: {type: shell, instructions: 'x {{n}}'}\n"
    )
    with pytest.raises(TaskFileError, match="n must be a number"):
        load_task_text(text, "t.yaml")
