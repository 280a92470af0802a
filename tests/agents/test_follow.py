"""cli_process.follow on an agent that has already exited when it is followed (a keeper
reports a quick command's start and end together): everything it printed is read, and what
it left behind is ended, as for an agent followed while it runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tui.agents.cli_process import follow
from tui.procs.groups import group_members
from tui.procs.process import spawn


async def test_an_agent_that_exited_before_it_is_followed_keeps_its_output_and_no_group(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "bg"
    # The background job holds stdout open: its output ends only when the group is ended.
    script = f"sleep 300 & echo $! > {pidfile}; printf 'one\\ntwo\\n'; echo oops >&2; exit 3"
    proc = await spawn(["bash", "-c", script], cwd=None, env=None)
    assert await proc.wait() == 3
    out: list[str] = []
    err: list[str] = []

    async def on_out(lines: list[str]) -> None:
        out.extend(lines)

    async def on_err(lines: list[str]) -> None:
        err.extend(lines)

    assert await follow(proc, on_out, on_err) == 3
    assert out == ["one", "two"] and err == ["oops"]
    assert pidfile.read_text().strip()  # the job was started, and is gone with its group
    assert group_members(proc.pid) == []


async def test_stdin_for_an_agent_that_exited_is_no_error() -> None:
    proc = await spawn(["bash", "-c", "echo hi"], cwd=None, env=None, stdin=subprocess.PIPE)
    await proc.wait()
    out: list[str] = []

    async def on_out(lines: list[str]) -> None:
        out.extend(lines)

    async def ignore(lines: list[str]) -> None:
        pass

    assert await follow(proc, on_out, ignore, stdin=b"unread\n") == 0
    assert out == ["hi"]
