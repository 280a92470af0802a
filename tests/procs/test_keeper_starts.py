"""What an agent the keeper starts (tui.procs.keeper_starts) gets, and what the engine learns
of it: descriptors, signals, PATH, errors, directory, start time — pinned, so that another way
of starting agents (posix_spawn was tried) must give the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs.children import communicate
from tui.procs.keeper_client import Keeper
from tui.procs.process import Child, proc_start_time


async def _run(proc: Child) -> tuple[str, str, int]:
    out, err, code = await communicate(proc)
    return out.decode(), err.decode(), code


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, subprocess.PIPE])
async def test_an_agent_holds_only_its_stdin_stdout_and_stderr(keeper: Keeper, stdin: int) -> None:
    # posix_spawn closes nothing: every descriptor of the keeper (its socket, epoll, the other
    # agents' pipes and pidfds) must be close-on-exec, or an agent would hold it (and a pipe
    # held open by another agent never reaches EOF).
    others = [await keeper.spawn(["sleep", "30"], cwd=None, env=None) for _ in range(2)]
    probe = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
    proc = await keeper.spawn(
        [sys.executable, "-I", "-S", "-c", probe], cwd=None, env=None, stdin=stdin
    )
    if proc.stdin is not None:
        proc.stdin.close()
    out, err, code = await _run(proc)
    for other in others:
        os.killpg(other.pid, signal.SIGKILL)
        await _run(other)
    # 3: the directory listdir itself has open.
    assert (out, err, code) == ("[0, 1, 2, 3]\n", "", 0)


async def test_an_agent_starts_with_default_sigpipe_as_popen_gives(keeper: Keeper) -> None:
    # Python ignores SIGPIPE, and so would the agent without the reset: `yes | head -1` in an
    # agent's script would then print "yes: Broken pipe" and end with an error.
    proc = await keeper.spawn(
        ["bash", "-c", "yes | head -1; echo ${PIPESTATUS[0]}"], cwd=None, env=None
    )
    out, err, code = await _run(proc)
    assert (out, err, code) == ("y\n141\n", "", 0)  # yes killed by SIGPIPE (128 + 13)


async def test_a_command_is_looked_up_on_the_agents_path(keeper: Keeper, tmp_path: Path) -> None:
    # The PATH in the agent's environment, not the keeper's, decides what runs; a directory
    # or a file that is not executable on the way is passed over, as by Popen (and execvp).
    first, second, third = (tmp_path / n for n in ("a", "b", "c"))
    for d in (first, second, third):
        d.mkdir()
    (first / "tool").mkdir()
    (second / "tool").write_text("#!/bin/sh\necho not me\n")  # not executable
    tool = third / "tool"
    tool.write_text('#!/bin/sh\necho "found $0"\n')
    tool.chmod(0o755)
    env = dict(os.environ, PATH=f"{first}:{second}:{third}:/usr/bin:/bin")
    proc = await keeper.spawn(["tool"], cwd=None, env=env)
    assert await _run(proc) == (f"found {tool}\n", "", 0)
    # Nothing runnable: the error names the command; a file that was there but could not be
    # run makes it "permission denied", as Popen says.
    with pytest.raises(PermissionError) as denied:
        await keeper.spawn(["tool"], cwd=None, env=dict(env, PATH=f"{first}:{second}"))
    assert denied.value.filename == "tool"
    with pytest.raises(FileNotFoundError) as missing:
        await keeper.spawn(["no-such-tool-anywhere"], cwd=None, env=env)
    assert missing.value.filename == "no-such-tool-anywhere"


async def test_executable_runs_with_argv_as_given(keeper: Keeper, tmp_path: Path) -> None:
    proc = await keeper.spawn(
        ["shown-name", "-c", 'echo "$0"'], cwd=None, env=None, executable="/bin/sh"
    )
    assert await _run(proc) == ("shown-name\n", "", 0)
    script = tmp_path / "no-shebang"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    with pytest.raises(OSError) as bad:  # the engine then starts the shell instead
        await keeper.spawn(["no-shebang"], cwd=None, env=None, executable=str(script))
    assert bad.value.filename == str(script)


async def test_a_relative_command_and_the_keepers_own_paths_follow_the_agents_cwd(
    keeper: Keeper, tmp_path: Path
) -> None:
    # "./run.sh" is found in the agent's directory; the keeper goes back to its own after each
    # start (its results file, spill files and socket may be relative to it).
    (tmp_path / "run.sh").write_text("#!/bin/sh\npwd\n")
    (tmp_path / "run.sh").chmod(0o755)
    proc = await keeper.spawn(["./run.sh"], cwd=str(tmp_path), env=None)
    assert await _run(proc) == (f"{tmp_path}\n", "", 0)
    with pytest.raises(FileNotFoundError) as gone:
        await keeper.spawn(["true"], cwd=str(tmp_path / "gone"), env=None)
    assert gone.value.filename == str(tmp_path / "gone")
    assert keeper.pid is not None
    assert os.readlink(f"/proc/{keeper.pid}/cwd") == os.getcwd()


async def test_each_agents_start_time_is_the_one_proc_shows(keeper: Keeper) -> None:
    # The start time (beside the pid, the run's identity for recovery) the keeper reports
    # must be exactly field 22 of the agent's stat, or recovery would take a live agent for
    # gone.
    agents = [
        await keeper.spawn(["cat"], cwd=None, env=None, stdin=subprocess.PIPE) for _ in range(60)
    ]
    try:
        for proc in agents:
            assert proc.identity().start_time == proc_start_time(proc.pid)
    finally:
        for proc in agents:
            assert proc.stdin is not None
            proc.stdin.close()
    assert all(code == 0 for _, _, code in [await _run(p) for p in agents])


async def test_an_agent_runs_under_the_default_scheduling_policy(keeper: Keeper) -> None:
    # The keeper's loop thread runs as SCHED_BATCH (it need not preempt anyone to read a
    # pipe); an agent must not inherit that: it gets what Popen from the engine gave it.
    probe = "import os; print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)"
    for _ in range(3):  # more than one start, on more than one start thread
        proc = await keeper.spawn([sys.executable, "-I", "-S", "-c", probe], cwd=None, env=None)
        assert await _run(proc) == (f"{os.SCHED_OTHER} 0\n", "", 0)
    assert keeper.pid is not None
    assert os.sched_getscheduler(keeper.pid) == os.SCHED_BATCH
