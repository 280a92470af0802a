"""A keeper whose engine dies (kill -9 of a real engine process) keeps its adoptable agents
running and keeps the output the engine had not acknowledged; the next engine attaches at its
socket and gets every byte from the offset it has stored, once; with no engine it leaves a
results file. Real keeper, real agents, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.procs import keeper_client
from tui.procs.keeper_client import Keeper, KeeperLost
from tui.procs.kept_runs import EndedChild, keeper_socket, read_results, results_path

ENGINE_ID = "e" * 32
LINE = 11  # bytes of "line-00001\n"

# A stand-in engine: spawns agents through its keeper (adoptable or not), reads their stdout
# and acknowledges the first ACK lines of each as stored, says "ready", then waits to be
# killed. argv: db, ack lines, engine id, line size, then one script per agent (prefix "!":
# not adoptable).
ENGINE = """
import asyncio, sys
ENGINE_ID, LINE = sys.argv[3], int(sys.argv[4])
from tui.procs.keeper_client import Keeper
async def main():
    db, ack = sys.argv[1], int(sys.argv[2])
    k = Keeper()
    k.start(ENGINE_ID)
    k.setup(ENGINE_ID, db)
    kids = []
    for i, script in enumerate(sys.argv[5:]):
        adoptable = not script.startswith("!")
        p = await k.spawn(["sh", "-c", script.lstrip("!")], cwd=None, env=None,
                          run_id=100 + i, adoptable=adoptable)
        kids.append(p)
    for p in kids:
        got = b""
        while got.count(b"\\n") < ack:
            got += await p.stdout.read(65536)
        p.ack(1, ack * LINE)
    print(k.pid, *[p.pid for p in kids], flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def _numbered(first: int, last: int) -> str:
    return f"i={first}; while [ $i -le {last} ]; do printf 'line-%05d\\n' $i; i=$((i+1)); done"


def _lines(first: int, last: int) -> bytes:
    return b"".join(b"line-%05d\n" % i for i in range(first, last + 1))


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Short: a Unix socket's path must fit in 108 bytes (pytest's tmp_path may not).
    d = Path(tempfile.mkdtemp(prefix="tk-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Engine:
    """The stand-in engine process, killed -9 by the test."""

    def __init__(self, db: Path, ack: int, scripts: list[str], wait: float = 60) -> None:
        env = {**os.environ, "TUI_KEEPER_WAIT": str(wait)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ENGINE, str(db), str(ack), ENGINE_ID, str(LINE), *scripts],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the stand-in engine did not start"
        self.keeper, *self.agents = map(int, line.split())

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return not raw[raw.rfind(b")") + 2 :].startswith(b"Z")


def _wait_for(cond: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


async def _read_all(child: object) -> bytes:
    out = b""
    while chunk := await child.stdout.read(65536):  # type: ignore[attr-defined]
        out += chunk
    return out


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    groups: list[int] = []
    yield groups
    for g in groups:
        with contextlib.suppress(OSError):
            os.killpg(g, signal.SIGKILL)


async def test_the_next_engine_gets_each_byte_from_its_stored_offset_once(
    tmp_path: Path, runtime: Path, cleanup: list[int]
) -> None:
    db = tmp_path / "db"
    go = tmp_path / "go"
    side = tmp_path / "side"
    end = tmp_path / "end"
    # Prints 1..50, then holds until the test says go (the engine is dead by then), appends
    # its side effect and prints 51..3000 (past a pipe's worth), then holds until it may end
    # (an agent whose every run has ended is not waited for: see the next test), exits 3.
    script = (
        f"{_numbered(1, 50)}; while [ ! -e {go} ]; do sleep 0.01; done; "
        f"echo done >> {side}; {_numbered(51, 3000)}; "
        f"while [ ! -e {end} ]; do sleep 0.01; done; exit 3"
    )
    eng = Engine(db, 20, [script])
    cleanup.extend(eng.agents)
    eng.kill()
    go.touch()  # the agent finishes its work while no engine is there
    path = keeper_socket(str(db), ENGINE_ID)
    assert path is not None
    _wait_for(path.exists, "the keeper listens for the next engine")
    assert _alive(eng.keeper) and _alive(eng.agents[0])
    keeper, kept = await Keeper.attach(path, ENGINE_ID)
    try:
        assert [(k.run_id, k.pid) for k in kept] == [(100, eng.agents[0])]
        child = keeper.claim(kept[0], (20 * LINE, 0))
        end.touch()
        async with asyncio.timeout(30):
            out = await _read_all(child)
            code = await child.wait()
        assert out == _lines(21, 3000)  # every line the store lacks, none it has
        assert code == 3
        assert side.read_text() == "done\n"
        child.close_pipes()
        child.release()
        # Handed on and forgotten: the keeper leaves.
        await asyncio.to_thread(_wait_for, lambda: not _alive(eng.keeper), "the keeper exits")
        assert not path.exists()
    finally:
        await keeper.close()


async def test_a_keeper_nobody_comes_for_leaves_its_results(
    tmp_path: Path, runtime: Path, cleanup: list[int]
) -> None:
    db = tmp_path / "db"
    go = tmp_path / "go"
    quick = f"{_numbered(1, 30)}; while [ ! -e {go} ]; do sleep 0.01; done; {_numbered(31, 40)}"
    stuck = f"{_numbered(1, 30)}; exec sleep 3600"
    eng = Engine(db, 10, [quick, stuck, "!" + stuck], wait=4.0)
    cleanup.extend(eng.agents)
    eng.kill()
    _wait_for(lambda: not _alive(eng.agents[2]), "a non-adoptable agent is killed at once")
    go.touch()
    _wait_for(lambda: not _alive(eng.keeper), "the keeper gives up waiting")
    assert not _alive(eng.agents[1]), "the agent still running at the deadline is killed"
    left = {r.run_id: r for r in read_results(results_path(str(db), ENGINE_ID))}
    assert sorted(left) == [100, 101]
    assert left[100].code == 0
    assert left[101].code is None  # did not end by itself: its run is interrupted
    child = EndedChild(left[100], (10 * LINE, 0))
    assert await _read_all(child) == _lines(11, 40)
    assert await child.wait() == 0


async def test_another_engines_id_is_refused(
    tmp_path: Path, runtime: Path, cleanup: list[int]
) -> None:
    db = tmp_path / "db"
    eng = Engine(db, 1, [f"{_numbered(1, 1)}; exec sleep 3600"])
    cleanup.extend(eng.agents)
    eng.kill()
    path = keeper_socket(str(db), ENGINE_ID)
    assert path is not None
    _wait_for(path.exists, "the keeper listens")
    with pytest.raises(KeeperLost):
        await Keeper.attach(path, "f" * 32)
    assert _alive(eng.agents[0]), "a refused engine changes nothing"
    keeper, kept = await Keeper.attach(path, ENGINE_ID)  # the right one still can
    keeper.drop(kept[0])
    await asyncio.to_thread(_wait_for, lambda: not _alive(eng.agents[0]), "dropped: killed")
    await asyncio.to_thread(_wait_for, lambda: not _alive(eng.keeper), "then the keeper exits")
    await keeper.close()


def test_without_a_private_runtime_directory_nothing_outlives_the_engine(
    tmp_path: Path, runtime: Path, cleanup: list[int]
) -> None:
    (runtime / "tui").mkdir(mode=0o755)  # others could reach a socket there: no keeper waits
    (runtime / "tui").chmod(0o755)
    db = tmp_path / "db"
    assert keeper_socket(str(db), ENGINE_ID) is None
    eng = Engine(db, 1, [f"{_numbered(1, 1)}; exec sleep 3600"])
    cleanup.extend(eng.agents)
    eng.kill()
    _wait_for(lambda: not _alive(eng.agents[0]), "the agent dies with its engine, as before")
    _wait_for(lambda: not _alive(eng.keeper), "and so does the keeper")
    assert not list((runtime / "tui").iterdir())  # no socket was made there


async def test_output_read_between_the_attach_and_the_claim_reaches_the_engine_once(
    tmp_path: Path, runtime: Path, cleanup: list[int]
) -> None:
    db = tmp_path / "db"
    go = tmp_path / "go"
    wrote = tmp_path / "wrote"
    end = tmp_path / "end"
    # After the attach, before the claim, the agent prints more than a pipe holds: its write
    # returns (and it marks `wrote`) only once the keeper has read some of it.
    script = (
        f"{_numbered(1, 10)}; while [ ! -e {go} ]; do sleep 0.01; done; "
        f"{_numbered(11, 8000)}; touch {wrote}; while [ ! -e {end} ]; do sleep 0.01; done"
    )
    eng = Engine(db, 10, [script])
    cleanup.extend(eng.agents)
    eng.kill()
    path = keeper_socket(str(db), ENGINE_ID)
    assert path is not None
    _wait_for(path.exists, "the keeper listens for the next engine")
    keeper, kept = await Keeper.attach(path, ENGINE_ID)
    try:
        go.touch()
        # The loop is held (as an engine's is while it reads its store before claiming):
        # whatever the keeper says meanwhile is read after the claim.
        _wait_for(wrote.exists, "the keeper read the agent's output before the claim")
        child = keeper.claim(kept[0], (10 * LINE, 0))
        end.touch()
        async with asyncio.timeout(30):
            out = await _read_all(child)
            assert await child.wait() == 0
        assert out == _lines(11, 8000)
        child.close_pipes()
        child.release()
    finally:
        await keeper.close()


class _Resume(logging.Handler):
    """Continues a stopped keeper the moment the next engine says it waits for it."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.waited = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "waiting for it" in record.getMessage():
            self.waited += 1
            os.kill(self.pid, signal.SIGCONT)


@contextlib.contextmanager
def _resumed_on_wait(pid: int, caplog: pytest.LogCaptureFixture) -> Iterator[_Resume]:
    caplog.set_level(logging.INFO, logger="tui.procs.keeper_client")
    resume = _Resume(pid)
    logger = logging.getLogger("tui.procs.keeper_client")
    logger.addHandler(resume)
    try:
        yield resume
    finally:
        logger.removeHandler(resume)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)


async def test_a_keeper_that_has_not_seen_its_engine_die_yet_is_waited_for(
    tmp_path: Path, runtime: Path, cleanup: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "db"
    go = tmp_path / "go"
    side = tmp_path / "side"
    script = f"{_numbered(1, 10)}; while [ ! -e {go} ]; do sleep 0.01; done; echo done >> {side}"
    eng = Engine(db, 10, [script])
    cleanup.extend(eng.agents)
    # A loaded machine: the keeper does not run between its engine's death and the next
    # engine's recovery, so it has not set up its socket yet (nor started what it was asked).
    os.kill(eng.keeper, signal.SIGSTOP)
    eng.kill()
    path = keeper_socket(str(db), ENGINE_ID)
    assert path is not None and not path.exists()
    with _resumed_on_wait(eng.keeper, caplog) as resume:
        got = await Keeper.adopt_from(str(db), ENGINE_ID)
    assert got is not None, "its agent was taken for dead: its task would run again beside it"
    assert resume.waited == 1
    keeper, kept = got
    try:
        assert [(k.run_id, k.pid) for k in kept] == [(100, eng.agents[0])]
        child = keeper.claim(kept[0], (10 * LINE, 0))
        go.touch()
        async with asyncio.timeout(30):
            assert await _read_all(child) == b""
            assert await child.wait() == 0
        assert side.read_text() == "done\n"  # once, by the agent adopted
        child.close_pipes()
        child.release()
    finally:
        await keeper.close()


async def test_a_dead_keeper_is_not_waited_for(
    tmp_path: Path, runtime: Path, cleanup: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "db"
    eng = Engine(db, 1, [f"{_numbered(1, 1)}; exec sleep 3600"])
    cleanup.extend(eng.agents)
    path = keeper_socket(str(db), ENGINE_ID)
    assert path is not None
    eng.kill()
    _wait_for(path.exists, "the keeper listens")
    os.kill(eng.keeper, signal.SIGKILL)  # its socket file stays, nobody behind it
    _wait_for(lambda: not _alive(eng.keeper), "the keeper is dead")
    with _resumed_on_wait(eng.keeper, caplog) as resume:
        assert await Keeper.adopt_from(str(db), ENGINE_ID) is None
    assert resume.waited == 0


async def test_a_keeper_that_never_answers_is_killed_rather_than_left_to_start_agents(
    tmp_path: Path, runtime: Path, cleanup: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "db"
    eng = Engine(db, 1, [f"{_numbered(1, 1)}; exec sleep 3600"])
    cleanup.extend(eng.agents)
    os.kill(eng.keeper, signal.SIGSTOP)  # never runs again by itself
    eng.kill()
    monkeypatch.setattr(keeper_client, "KEEPER_WAIT", 0.0)  # given up on at once
    assert await Keeper.adopt_from(str(db), ENGINE_ID) is None
    # Gone: it cannot start what it was asked to start after recovery has looked.
    assert not _alive(eng.keeper)
