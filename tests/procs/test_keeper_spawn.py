"""Where starting agents with glibc's posix_spawn (tui.procs.keeper_spawn) could differ from
Popen: the environment built from the keeper's base and the engine's changes, signal
dispositions and mask, a missing directory or command, stdin from /dev/null, overlapping
starts. tests/procs/test_keeper_starts.py pins the rest."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs.children import communicate
from tui.procs.keeper_client import Keeper
from tui.procs.keeper_spawn import Spawner
from tui.procs.process import Child

_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


async def _run(proc: Child) -> tuple[str, str, int]:
    out, err, code = await communicate(proc)
    return out.decode(), err.decode(), code


async def _env_of(keeper: Keeper, env: dict[str, str]) -> dict[str, str]:
    proc = await keeper.spawn([sys.executable, "-I", "-S", "-c", _ENV], cwd=None, env=env)
    out, err, code = await _run(proc)
    assert (err, code) == ("", 0)
    got: dict[str, str] = json.loads(out)
    got.pop("LC_CTYPE", None)  # Python may set it itself (PEP 538)
    return got


async def test_an_agent_gets_exactly_the_environment_asked_for(keeper: Keeper) -> None:
    # The keeper copies its base's entries and puts each change in its name's place (or after
    # them): a value changed, a name added, and then one removed, each exactly as asked.
    want = dict(os.environ, HOME="/somewhere/else", TUI_SPAWN_TEST="a=b c")
    want.pop("LC_CTYPE", None)
    assert await _env_of(keeper, want) == want
    first = next(iter(os.environ))
    fewer = {k: v for k, v in want.items() if k != first}
    assert await _env_of(keeper, fewer) == fewer
    assert await _env_of(keeper, want) == want  # the base itself is unchanged by either


async def test_an_agent_without_path_finds_commands_on_the_default_path(keeper: Keeper) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PATH"}
    proc = await keeper.spawn(["env"], cwd=None, env=env)  # found in /bin or /usr/bin
    out, err, code = await _run(proc)
    assert (err, code) == ("", 0)
    assert [ln for ln in out.splitlines() if ln.startswith("PATH=")] == []


async def test_an_agent_starts_with_no_signal_blocked_and_the_keepers_handlers_gone(
    keeper: Keeper,
) -> None:
    # The keeper catches SIGHUP and Python ignores SIGPIPE and SIGXFSZ: in the agent the three
    # are at their defaults, and nothing is blocked. It ignores what a program Popen started
    # here ignores: glibc's own signals (32, 33), which its posix_spawn's child sets to
    # SIG_IGN unless told otherwise, are not among them.
    here = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True)
    proc = await keeper.spawn(["cat", "/proc/self/status"], cwd=None, env=None)
    out, err, code = await _run(proc)
    assert (err, code) == ("", 0)
    fields = _status(out)
    assert int(fields["SigBlk"], 16) == 0
    assert int(fields["SigCgt"], 16) == 0
    assert fields["SigIgn"] == _status(here.stdout)["SigIgn"]
    for sig in (signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ, 32, 33):
        assert not int(fields["SigIgn"], 16) & (1 << (sig - 1)), sig


def _status(text: str) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


async def test_an_agents_stdin_is_dev_null_or_the_pipe_it_asked_for(keeper: Keeper) -> None:
    proc = await keeper.spawn(["cat"], cwd=None, env=None)
    assert await _run(proc) == ("", "", 0)  # /dev/null: at its end at once
    proc = await keeper.spawn(["cat"], cwd=None, env=None, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"fed\n")
    proc.stdin.close()
    assert await _run(proc) == ("fed\n", "", 0)


async def test_a_missing_directory_is_named_before_a_missing_command(
    keeper: Keeper, tmp_path: Path
) -> None:
    # Popen enters the directory first: that is the error, whatever the command.
    gone = str(tmp_path / "gone")
    with pytest.raises(FileNotFoundError) as err:
        await keeper.spawn(["no-such-tool-anywhere"], cwd=gone, env=None)
    assert err.value.filename == gone
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError) as err2:
        await keeper.spawn(["true"], cwd=str(tmp_path / "file"), env=None)
    assert err2.value.filename == str(tmp_path / "file")
    with pytest.raises(FileNotFoundError) as err3:  # and a missing absolute command
        await keeper.spawn(["x"], cwd=str(tmp_path), env=None, executable=str(tmp_path / "x"))
    assert err3.value.filename == str(tmp_path / "x")


@pytest.mark.parametrize("where", ["argv", "env", "name"])
async def test_a_nul_in_an_argument_or_variable_or_a_bad_name_is_refused(
    keeper: Keeper, where: str
) -> None:
    # As Popen does: the agent would otherwise run with only what comes before it.
    argv, env = ["echo", "a"], dict(os.environ)
    if where == "argv":
        argv[1] = "a\0; rm -rf x"
    elif where == "env":
        env["TUI_SPAWN_TEST"] = "a\0b"
    else:  # a name with "=" would set another variable
        env["TUI_SPAWN=TEST"] = "b"
    with pytest.raises(ValueError, match=r"null|name"):
        await keeper.spawn(argv, cwd=None, env=env)


async def test_agents_started_together_each_get_their_own_pipes_and_arguments(
    keeper: Keeper,
) -> None:
    # Starts overlap on the keeper's threads: none may get another's descriptors or argv.
    procs = await asyncio.gather(
        *(keeper.spawn(["echo", str(i)], cwd=None, env=None) for i in range(40))
    )
    outs = await asyncio.gather(*(_run(p) for p in procs))
    assert outs == [(f"{i}\n", "", 0) for i in range(40)]


def test_glibc_here_has_all_an_agent_needs() -> None:
    # Otherwise the keeper falls back to Popen (the tests above pass either way): on the
    # Debian 12 this runs on (glibc 2.36), the posix_spawn path must be the one taken.
    Spawner(os.getcwd())
