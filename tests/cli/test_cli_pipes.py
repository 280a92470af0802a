"""Output closed early (`| head`): the command stops quietly, never with a traceback."""

from __future__ import annotations

import subprocess

from tests.cli.cli_support import Tui, shell_task, write_tasks


def piped_to_head(tui: Tui, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``tui ARGS | head -n 1`` through a real pipe: the reader goes away after one line."""
    producer = subprocess.Popen(
        tui._argv(args, True), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tui.dir
    )
    assert producer.stdout is not None
    head = subprocess.run(["head", "-n", "1"], stdin=producer.stdout, capture_output=True)
    producer.stdout.close()  # only head holds the read end now: when it exits, the pipe closes
    _, err = producer.communicate(timeout=60)
    return subprocess.CompletedProcess(args, producer.returncode or 0, head.stdout, err)


def test_logs_into_head(tui: Tui) -> None:
    f = write_tasks(tui.dir / "many.yaml", [shell_task("many", "seq 1 200000")])
    assert tui("run", str(f)).returncode == 0
    done = piped_to_head(tui, "logs", "many")
    assert done.stdout == b"1\n"
    assert b"Traceback" not in done.stderr and b"Exception" not in done.stderr, done.stderr


def test_run_json_into_head(tui: Tui) -> None:
    f = write_tasks(tui.dir / "chain.yaml", [shell_task(f"t{i}", "true") for i in range(40)])
    done = piped_to_head(tui, "run", str(f), "--json")
    assert done.stdout.startswith(b"{")
    assert b"Traceback" not in done.stderr and b"Exception" not in done.stderr, done.stderr


def test_every_line_reaches_a_pipe_before_tui_exits(tui: Tui) -> None:
    """`tui` leaves without the interpreter's teardown: what it buffered for a pipe is
    written first, to the last line, and the exit code is the command's."""
    f = write_tasks(
        tui.dir / "lines.yaml",
        [shell_task("lines", "seq 1 100000"), shell_task("bad", "exit 3")],
    )
    run = tui("run", str(f), "--json")
    assert run.returncode == 1, str(run)  # not every task completed
    assert run.stdout.endswith("}\n") and run.stdout.count("\n") >= 6, str(run)
    logs = tui("logs", "lines")
    assert logs.returncode == 0 and logs.stdout.endswith("\n99999\n100000\n"), logs.stderr
    assert logs.stdout.count("\n") == 100_000
