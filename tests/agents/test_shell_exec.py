"""Shell tasks started without the shell look exactly like the same tasks run by `bash -c`.

Each command runs as a real shell task through the real engine twice: once with the shell
`bash` (plain commands are exec'd directly) and once with bash under another name (which tui
always runs, as it does any other shell). Output, exit code, state, environment, directory and
process group must be the same. The `bash` used in the first run is a wrapper that records
each start, so the test also knows which commands did not start the shell.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

# Differ from run to run whoever starts the command.
RUN_SPECIFIC = ("TUI_TASK_ID=", "TUI_RUN_ID=", "TUI_DB=", "TUI_ENGINE_ID=")


@dataclass
class Seen:
    state: str
    exit_code: int | None
    stdout: list[str]
    stderr: list[str]


def _scripts(project: Path) -> None:
    def script(name: str, text: str, mode: int = 0o755) -> None:
        (project / name).write_text(text)
        (project / name).chmod(mode)

    script("noshebang", "echo from-bash $((1 + 1))\n")  # bash runs it itself (ENOEXEC)
    script("badinterp", "#!/nonexistent/interp\necho never\n")
    script("notexec", "#!/bin/sh\necho never\n", 0o644)
    script("selfkill", "#!/bin/sh\nkill -TERM $$\n")
    script("exit3", "#!/bin/sh\necho out; echo err >&2; exit 3\n")
    # pid, pgrp and session of the command itself: fields 1, 5 and 6 of its stat.
    script(
        "ids",
        "#!/bin/sh\nset -- $(cat /proc/$$/stat)\n"
        '[ "$1" = "$5" ] && [ "$1" = "$6" ] && echo leader\n',
    )


async def _run(db: Path, shell: str, script: str, project: Path) -> Seen:
    store = await Store.open(db)
    try:
        agent = {"type": "shell", "instructions": script, "project_dir": str(project)}
        task = Task.model_validate({"name": "same", "agent": agent})
        async with Engine(store, shell=shell) as engine:
            await engine.submit([task])
            await asyncio.wait_for(engine.wait_settled([task.id]), 30)
            rec = await engine.get(task.id)
        (run,) = await store.runs(task.id)
        lines = await store.read_output(task.id)
    finally:
        await store.close()
    assert rec is not None
    out = [ln.text for ln in lines if ln.stream == STDOUT]
    err = [ln.text for ln in lines if ln.stream == STDERR]
    return Seen(rec.state.value, run.exit_code, out, err)


@pytest.fixture
def shells(tmp_path: Path) -> tuple[str, str, Path]:
    """(bash that records its starts, bash by another name, the record)."""
    log = tmp_path / "bash-starts"
    log.touch()
    bin_dir = tmp_path / "shell-bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "bash"
    wrapper.write_text(f'#!/bin/sh\necho "$2" >> {log}\nexec {BASH} "$@"\n')
    wrapper.chmod(0o755)
    other = bin_dir / "bash-always"
    other.symlink_to(BASH or "bash")
    return str(wrapper), str(other), log


COMMANDS = [
    # (script, started without the shell)
    ("true", True),
    ("false", True),
    ("/bin/true", True),
    ("ls -1 .", True),
    ("ls no-such-file", True),
    ("./exit3", True),
    ("./selfkill", True),
    ("./ids", True),
    ("pwd", False),  # a builtin
    ("/usr/bin/pwd -L", True),
    ("/usr/bin/env", True),
    ("no-such-command-xyz", False),  # bash's "command not found", 127
    ("./notexec", False),  # bash's "Permission denied", 126
    ("./noshebang", False),  # exec fails, nothing ran: bash runs it as a script
    ("./badinterp", False),  # exec fails: bash says why
    ("echo $((6 * 7)) | cat", False),
]


@pytest.mark.parametrize(("script", "direct"), COMMANDS)
async def test_a_command_looks_the_same_started_directly_or_by_bash(
    tmp_path: Path,
    shells: tuple[str, str, Path],
    script: str,
    direct: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    project = tmp_path / "project"  # a symlink: PWD must be what bash would say
    project.symlink_to(real)
    _scripts(real)
    # What the engine passes on: an OLDPWD that names no directory, a nested SHLVL.
    monkeypatch.setenv("OLDPWD", str(tmp_path / "gone"))
    monkeypatch.setenv("SHLVL", "2")
    wrapper, always, log = shells
    via_bash = await _run(tmp_path / "b.db", always, script, project)
    maybe_direct = await _run(tmp_path / "d.db", wrapper, script, project)

    assert (log.read_text().splitlines() == []) is direct
    if script == "/usr/bin/env":  # the same environment, but for the run's own ids
        for seen in (via_bash, maybe_direct):
            seen.stdout = sorted(ln for ln in seen.stdout if not ln.startswith(RUN_SPECIFIC))
    assert maybe_direct == via_bash


async def test_what_bash_says_of_a_missing_command(
    tmp_path: Path, shells: tuple[str, str, Path]
) -> None:
    wrapper, _, _ = shells
    seen = await _run(tmp_path / "x.db", wrapper, "no-such-command-xyz", tmp_path)
    assert (seen.state, seen.exit_code) == ("FAILED", 127)
    assert seen.stderr[0] == "tui:same: line 1: no-such-command-xyz: command not found"


async def test_a_killed_command_leaves_nothing_and_is_reported_as_killed(
    tmp_path: Path, store: Store
) -> None:
    """The command is the process group's leader, as under bash's one-shot exec: a timeout
    ends it and what it started."""
    agent = {"type": "shell", "instructions": "sleep 30", "project_dir": str(tmp_path)}
    task = Task.model_validate({"name": "slow", "agent": agent, "timeout": 1})
    async with Engine(store) as engine:
        await engine.submit([task])
        await asyncio.wait_for(engine.wait_settled([task.id]), 30)
        rec = await engine.get(task.id)
    (run,) = await store.runs(task.id)
    assert rec is not None and rec.state.value in ("TIMED_OUT", "FAILED")
    assert run.pid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)
