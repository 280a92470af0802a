"""The keeper (tui.procs.keeper) starts, reads and reaps agents for the engine: real keeper
processes, real children."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procs.children import communicate, read_all
from tui.procs.keeper import READ_CHUNK, WINDOW
from tui.procs.keeper_afterlife import FRAME_LEN
from tui.procs.keeper_client import _KEEPER, Keeper
from tui.procs.kept_child import KeptChild
from tui.procs.process import proc_start_time
from tui.procs.run_env import RunEnv


def _ppid(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rfind(b")") + 1 :].split()[1])


async def _gone(pid: int, what: str) -> None:
    deadline = time.monotonic() + 10
    while proc_start_time(pid) is not None and not _zombie(pid):
        assert time.monotonic() < deadline, f"{what} {pid} was left behind"
        await asyncio.sleep(0.01)


def _zombie(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return raw[raw.rfind(b")") + 2 :].startswith(b"Z")


def test_the_keeper_runs_on_the_standard_library_and_its_own_modules() -> None:
    """It runs as ``python -I -S keeper.py`` on every engine's start: nothing else of tui's
    (nor any installed package) is imported, whatever its modules are split into."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-X", "importtime", _KEEPER, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stderr=subprocess.PIPE,
        )
    _, err = proc.communicate(timeout=30)  # our end closed: it exits, as on an engine's death
    assert proc.returncode == 0, err.decode()
    lines = [ln for ln in err.decode().splitlines() if ln.startswith("import time:")]
    imported = {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}  # [0]: the header
    ours_ = {name for name in imported if name.split(".")[0] == "tui"}
    assert ours_ == {
        "tui",
        "tui.procs",
        "tui.procs.keeper_afterlife",
        "tui.procs.keeper_agent",
        "tui.procs.keeper_slots",
        "tui.procs.keeper_spawn",
        "tui.procs.keeper_starts",
    }
    # Tried but not there (pickle's `org.python.core`, for Jython) is no import.
    top = {name.split(".")[0] for name in imported} - {"tui"}
    installed = {name for name in top - sys.stdlib_module_names if importlib.util.find_spec(name)}
    assert not installed, f"the keeper imports {installed}"


@pytest.mark.parametrize("where", ["cwd", "moved", "here"])
async def test_a_kept_child_runs_as_spawn_would_start_it(
    keeper: Keeper, tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its own session and group, its cwd and env (a variable set, one removed), its output and
    # exit code; its parent is the keeper, not this process. (In the keeper's own directory
    # the keeper starts it with posix_spawn, elsewhere through Popen.)
    if where == "moved":  # we moved since the keeper started: the agent starts where we are
        monkeypatch.chdir(tmp_path)
    expected_dir = os.getcwd() if where == "here" else str(tmp_path)
    os.environ["TUI_KEEPER_TEST_GONE"] = "x"
    try:
        env = {k: v for k, v in os.environ.items() if k != "TUI_KEEPER_TEST_GONE"}
        env["TUI_KEEPER_TEST"] = "yes ✓"
        script = (
            'echo "$TUI_KEEPER_TEST|${TUI_KEEPER_TEST_GONE-unset}|$(pwd)|$PPID"; '
            "ps -o sid=,pgid= -p $$; echo err >&2; exit 3"
        )
        cwd = str(tmp_path) if where == "cwd" else None
        proc = await keeper.spawn(["bash", "-c", script], cwd=cwd, env=env)
        assert isinstance(proc, KeptChild)
        out, err, code = await communicate(proc)
    finally:
        del os.environ["TUI_KEEPER_TEST_GONE"]
    first, ids = out.decode().splitlines()
    assert first == f"yes ✓|unset|{expected_dir}|{keeper.pid}"
    assert ids.split() == [str(proc.pid), str(proc.pid)]
    assert (err, code) == (b"err\n", 3)
    assert keeper.pid != os.getpid()


@pytest.mark.parametrize("change", ["none", "set", "unset", "set-in-place", "unset-in-place"])
async def test_a_run_environment_reaches_the_child_as_the_dict_it_reads_as(
    keeper: Keeper, change: str
) -> None:
    # A run's env is the engine's environment with the run's variables over it; the keeper is
    # told only those while that is so. Changed in place afterwards (an adapter may), the
    # child still gets exactly what the dict holds.
    base = dict(os.environ)  # equal to the keeper's base: only the run's own are sent
    env = RunEnv(base, {"TUI_KEEPER_OWN": "own"})
    if change == "set":
        env = env.over({"TUI_KEEPER_MORE": "more"})
    elif change == "set-in-place":
        env["TUI_KEEPER_MORE"] = "more"
    elif change == "unset-in-place":
        del env["HOME"]
    elif change == "unset":
        env = RunEnv(base, {"TUI_KEEPER_OWN": "own", "HOME": ""})
    script = 'echo "$TUI_KEEPER_OWN|${TUI_KEEPER_MORE-unset}|${HOME-unset}"'
    proc = await keeper.spawn(["bash", "-c", script], cwd=None, env=env)
    out, _, code = await communicate(proc)
    more = "more" if change in ("set", "set-in-place") else "unset"
    home = {"unset-in-place": "unset", "unset": ""}.get(change, os.environ["HOME"])
    assert (out.decode(), code) == (f"own|{more}|{home}\n", 0)


async def test_stdin_is_written_then_closed(keeper: Keeper) -> None:
    proc = await keeper.spawn(["cat"], cwd=None, env=None, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"one\n")
    await proc.stdin.drain()
    proc.stdin.write(b"two" * 100_000)  # more than a pipe holds: the keeper writes it in parts
    proc.stdin.close()
    out, _, code = await communicate(proc)
    assert out == b"one\n" + b"two" * 100_000 and code == 0


async def test_a_command_that_cannot_start_raises_as_spawn_does(keeper: Keeper) -> None:
    with pytest.raises(FileNotFoundError):
        await keeper.spawn(["/nonexistent/agent-cli"], cwd=None, env=None)
    with pytest.raises(FileNotFoundError):
        await keeper.spawn(["true"], cwd="/nonexistent-dir", env=None)
    # The keeper goes on.
    proc = await keeper.spawn(["true"], cwd=None, env=None)
    assert (await communicate(proc))[2] == 0


async def test_the_identity_is_the_agent_itself(keeper: Keeper) -> None:
    proc = await keeper.spawn(["sleep", "30"], cwd=None, env=None)
    try:
        ident = proc.identity()
        assert (ident.pid, ident.pgid, ident.start_time) == (
            proc.pid,
            proc.pid,
            proc_start_time(proc.pid),
        )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
    assert (await communicate(proc))[2] == -signal.SIGKILL


async def test_a_kept_child_is_heard_at_its_first_output_or_else_at_its_exit(
    keeper: Keeper,
) -> None:
    # A follower with nothing to write to a child makes its readers only once it is heard:
    # one that prints while it runs must be heard while it runs (its lines shown live), a
    # quiet one at its exit.
    talker = await keeper.spawn(["sh", "-c", "echo hi; exec sleep 30"], cwd=None, env=None)
    try:
        async with asyncio.timeout(10):
            await talker.heard()
        assert talker.returncode is None
        assert await talker.stdout.read(100) == b"hi\n"
    finally:
        os.killpg(talker.pid, signal.SIGKILL)
    assert (await communicate(talker))[2] == -signal.SIGKILL
    quiet = await keeper.spawn(["sh", "-c", "exit 3"], cwd=None, env=None)
    async with asyncio.timeout(10):
        await quiet.heard()
    assert quiet.returncode == 3
    assert await communicate(quiet) == (b"", b"", 3)


async def test_many_children_and_large_output_arrive_whole_and_in_order(keeper: Keeper) -> None:
    # 8 MB through each of two streams (far past the keeper's window: it pauses and resumes
    # reading), beside 200 short children.
    big = (
        "import sys\n"
        "for i in range(400_000): sys.stdout.write(f'{i:019d}\\n')\n"
        "sys.stderr.write('e' * 8_000_000)\n"
    )
    loud = await keeper.spawn([sys.executable, "-c", big], cwd=None, env=None)
    quiet = await asyncio.gather(
        *(
            keeper.spawn(["sh", "-c", f"echo {i}; exit {i % 7}"], cwd=None, env=None)
            for i in range(200)
        )
    )
    results = await asyncio.gather(*(communicate(p) for p in quiet))
    assert [(o, c) for o, _, c in results] == [(f"{i}\n".encode(), i % 7) for i in range(200)]
    out, err, code = await communicate(loud)
    assert code == 0
    assert out == b"".join(f"{i:019d}\n".encode() for i in range(400_000))
    assert err == b"e" * 8_000_000


async def test_a_dead_keeper_ends_its_agents_and_the_next_spawn_starts_another(
    keeper: Keeper,
) -> None:
    proc = await keeper.spawn(["sh", "-c", "sleep 300 & sleep 300"], cwd=None, env=None)
    assert isinstance(proc, KeptChild)
    first = keeper.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    async with asyncio.timeout(10):
        code = await proc.wait()
    assert code == -signal.SIGKILL and proc.lost
    assert await read_all(proc.stdout) == b""
    deadline = time.monotonic() + 10
    while True:  # the whole group, the background sleep too
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the agent's group outlived its keeper"
        await asyncio.sleep(0.01)
    proc.close_pipes()
    again = await keeper.spawn(["sh", "-c", "echo $PPID"], cwd=None, env=None)
    out, _, code = await communicate(again)
    assert code == 0 and int(out) == keeper.pid != first


def test_an_engine_killed_takes_its_agents_with_it(tmp_path: Path) -> None:
    # The keeper sees its engine's end of the socket close: it kills the groups it started
    # (phase 1: nothing may run on unwatched; the next engine runs those tasks again).
    engine = (
        "import asyncio, sys\n"
        "from tui.procs.keeper_client import Keeper\n"
        "async def main():\n"
        "    k = Keeper()\n"
        "    p = await k.spawn(['sh', '-c', 'sleep 300 & sleep 300'], cwd=None, env=None)\n"
        "    print(p.pid, k.pid, flush=True)\n"
        "    await asyncio.sleep(300)\n"
        "asyncio.run(main())\n"
    )
    eng = subprocess.Popen([sys.executable, "-c", engine], stdout=subprocess.PIPE)
    try:
        assert eng.stdout is not None
        agent, keeper_pid = map(int, eng.stdout.readline().split())
        eng.kill()
        eng.wait()
        deadline = time.monotonic() + 10
        while True:
            try:
                os.killpg(agent, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the agent outlived its engine and keeper"
            time.sleep(0.01)
        while proc_start_time(keeper_pid) is not None and not _zombie(keeper_pid):
            assert time.monotonic() < deadline, "the keeper outlived its engine"
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError, UnboundLocalError):
            os.killpg(agent, signal.SIGKILL)


async def test_a_spawn_cancelled_midway_leaves_no_process(keeper: Keeper) -> None:
    marker = f"TUI_KEEPER_CANCEL={os.getpid()}-{time.monotonic_ns()}".encode()
    env = {**os.environ, "TUI_KEEPER_CANCEL": marker.split(b"=", 1)[1].decode()}
    await communicate(await keeper.spawn(["true"], cwd=None, env=None))  # the keeper is up
    task = asyncio.create_task(keeper.spawn(["sleep", "300"], cwd=None, env=env))
    await asyncio.sleep(0)  # the request is on its way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The keeper answers in order: once a later spawn is back, the cancelled one was too.
    await communicate(await keeper.spawn(["true"], cwd=None, env=None))
    deadline = time.monotonic() + 10
    while left := [pid for pid in _pids() if marker in _environ(pid) and not _zombie(pid)]:
        assert time.monotonic() < deadline, f"the cancelled child {left} was left behind"
        await asyncio.sleep(0.01)


def test_a_stop_ends_what_the_engine_did_not_end() -> None:
    # A stop's EOF, an agent still alive that its engine did not end (its spawn's answer
    # came too late: the engine had cancelled the run and stopped): the keeper kills it
    # rather than leave it running unrecorded, for the next engine to run that task again.
    ours, theirs = socket.socketpair()
    with ours:
        with theirs:
            keeper = subprocess.Popen(
                [sys.executable, "-I", "-S", _KEEPER, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
            )
        try:
            argv = ["sh", "-c", "exec sleep 300"]
            _frame(ours, [("spawn", 1, argv, {}, [], os.getcwd(), None, False)])
            pid = _spawned(ours)
            _frame(ours, [("stop",)])
            ours.shutdown(socket.SHUT_WR)
            assert keeper.wait(timeout=30) == 0
            left = proc_start_time(pid) is not None and not _zombie(pid)
        finally:
            keeper.kill()
            keeper.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    assert not left, "the agent outlived its keeper's stop"


def _frame(sock: socket.socket, messages: list[tuple[object, ...]]) -> None:
    data = pickle.dumps(messages, pickle.HIGHEST_PROTOCOL)
    sock.sendall(FRAME_LEN.pack(len(data)) + data)


def _spawned(sock: socket.socket) -> int:
    """The pid of the keeper's ``spawned`` answer (what comes before it, skipped)."""
    buf = b""
    while True:
        chunk = sock.recv(65536)
        assert chunk, "the keeper closed the socket"
        buf += chunk
        while len(buf) >= FRAME_LEN.size:
            (size,) = FRAME_LEN.unpack_from(buf)
            if len(buf) < FRAME_LEN.size + size:
                break
            for msg in pickle.loads(buf[FRAME_LEN.size : FRAME_LEN.size + size]):
                if msg[0] == "spawned":
                    return int(msg[2])
                assert msg[0] != "failed", msg
            buf = buf[FRAME_LEN.size + size :]


async def test_spawns_cancelled_as_the_engine_stops_leave_no_process() -> None:
    # Engine.stop cancels runs whose spawn is on its way (a run sent ahead, or just stored),
    # then closes the keeper at once: the starts it had under way must not outlive it,
    # unrecorded, for the next engine to run those tasks again beside them.
    marker = f"TUI_KEEPER_STOP={os.getpid()}-{time.monotonic_ns()}".encode()
    env = {**os.environ, "TUI_KEEPER_STOP": marker.split(b"=", 1)[1].decode()}
    k = Keeper()
    await communicate(await k.spawn(["true"], cwd=None, env=None))  # it is up
    tasks = [asyncio.create_task(k.spawn(["sleep", "300"], cwd=None, env=env)) for _ in range(32)]
    await asyncio.sleep(0)  # the requests are on their way
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await k.close()  # it has exited and been reaped
    left = [pid for pid in _pids() if marker in _environ(pid) and not _zombie(pid)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    assert not left, f"started as the keeper stopped, {left} outlived it"


def _pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


async def test_a_keeper_that_does_not_stop_when_told_is_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tui.procs.keeper_client as keeper_client

    monkeypatch.setattr(keeper_client, "CLOSE_WAIT", 0.5)
    k = Keeper()
    await communicate(await k.spawn(["true"], cwd=None, env=None))  # it is up
    pid = k.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it cannot read the stop
    async with asyncio.timeout(10):
        await k.close()
    assert proc_start_time(pid) is None  # killed and reaped


async def test_an_agent_whose_output_is_not_taken_waits_on_its_pipe(
    keeper: Keeper, tmp_path: Path
) -> None:
    # Nobody reads the agent's stdout: the keeper forwards one window of it and then stops
    # reading, so the agent blocks in write() (as with a pipe the engine read itself) and
    # memory stays bounded; reading it then lets the agent go on to its end.
    mark = tmp_path / "done"
    size = 8 * WINDOW
    script = f"import sys; sys.stdout.buffer.write(b'x' * {size}); open({str(mark)!r}, 'w')"
    proc = await keeper.spawn([sys.executable, "-c", script], cwd=None, env=None)
    assert isinstance(proc, KeptChild)
    deadline = time.monotonic() + 30
    while not (_wchan(proc.pid).endswith("pipe_write") and proc.out.queued >= WINDOW):
        assert time.monotonic() < deadline, "the agent never had to wait for its reader"
        await asyncio.sleep(0.01)
    assert proc.out.queued <= WINDOW + READ_CHUNK
    assert not mark.exists()
    out, _, code = await communicate(proc)
    assert (len(out), code) == (size, 0) and mark.exists()


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""
