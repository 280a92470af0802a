"""kill -9 of the daemon while shell agents run: its keeper keeps them running, and the next
daemon adopts them — every side effect once, every output line stored once and in order, the
real exit codes, no process left. A keeper nobody comes for leaves its results for the next
start; a keeper killed too takes the agents with it (the guard), and their runs are run again;
a keeper not run between the kill and the next start is waited for.
Real daemons, keepers and agents."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.cli.cli_support import marker_processes
from tests.conftest import shell_task
from tests.daemon.kill9 import kill_9_daemon, open_run_pids
from tests.daemon.test_exit_kept import query
from tests.daemon.test_guard import wait_for

from tui.daemon.lifecycle import ensure, stop
from tui.daemon.paths import daemon_paths
from tui.daemon.remote import RemoteEngine
from tui.model.states import State
from tui.model.task import Task
from tui.procs.kept_runs import keeper_socket, results_path
from tui.store.chunks import stored_lines


def _script(marker: str, name: str, effects: Path, gates: list[Path], code: int) -> str:
    """50 numbered lines, the side effect, then for each gate: wait for it, 250 more lines."""
    lines = [f": {marker}-{name}", f"for i in $(seq 1 50); do echo {name}-$i; done"]
    lines.append(f'echo {name} >> "{effects}"')
    first = 51
    for gate in gates:
        lines.append(f'while [ ! -e "{gate}" ]; do sleep 0.01; done')
        lines.append(f"for i in $(seq {first} {first + 249}); do echo {name}-$i; done")
        first += 250
    lines.append(f"exit {code}")
    return "\n".join(lines)


async def _settled(remote: RemoteEngine, tasks: list[Task], timeout: float = 60) -> None:
    async def settled() -> None:
        while True:
            recs = [await remote.get(t.id) for t in tasks]
            if all(r is not None and r.settled for r in recs):
                return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(settled(), timeout)


def _stdout(db: Path) -> dict[str, list[str]]:
    """Each task's stored stdout lines, in line order."""
    out = query(db, "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output")
    names = dict(query(db, "SELECT id, name FROM tasks"))
    by: dict[str, list[tuple[int, str]]] = {}
    for ln in stored_lines(out):
        if ln.stream == 1:
            by.setdefault(names[ln.task_id], []).append((ln.seq, ln.text))
    return {name: [t for _, t in sorted(rows)] for name, rows in by.items()}


def _lines_of(name: str, last: int) -> list[str]:
    return [f"{name}-{i}" for i in range(1, last + 1)]


def _stored_to(db: Path, names: list[str], line: int) -> Callable[[], bool]:
    """Whether line ``line`` of each of those tasks is stored."""

    def there() -> bool:
        got = _stdout(db)
        return all(f"{n}-{line}" in got.get(n, []) for n in names)

    return there


def _gone(pid: int) -> Callable[[], bool]:
    return lambda: not Path(f"/proc/{pid}").exists()


async def test_the_next_daemon_adopts_what_ran_on(db: Path, tmp_path: Path) -> None:
    marker = f"tui-adopt-{uuid.uuid4().hex[:10]}"
    effects, gate1, gate2 = tmp_path / "effects", tmp_path / "gate1", tmp_path / "gate2"
    once = {"retry": {"max_attempts": 1}}
    # a, b and c end while no daemon runs (c failing); d and e run on under the next one.
    plan = {"a": ([gate1], 0), "b": ([gate1], 0), "c": ([gate1], 4), "d": ([gate1, gate2], 0)}
    plan["e"] = ([gate1, gate2], 5)
    tasks = [
        shell_task(n, _script(marker, n, effects, gates, code), **once)
        for n, (gates, code) in plan.items()
    ]
    left = await kill_9_daemon(
        db, tasks, until=_stored_to(db, list(plan), 50), what="line 50 stored", concurrency=5
    )
    assert len(left.agents) == 5 and left.keeper is not None
    path = keeper_socket(str(db), left.engine_id)
    assert path is not None
    await wait_for(path.exists, "the keeper waits for the next daemon")
    gate1.touch()  # a, b, c end with no daemon; d and e print on and wait
    for n in "abc":
        await wait_for(lambda n=n: not marker_processes(f"{marker}-{n}"), f"{n} to end")
    # (Counted by name: a shell's fork before it execs `sleep` shows its command line too.)
    assert all(marker_processes(f"{marker}-{n}") for n in "de"), "the guard spared them"

    remote = await ensure(db, concurrency=5)
    try:
        gate2.touch()
        await _settled(remote, tasks)
    finally:
        await remote.aclose()
        await stop(db)

    assert Counter(effects.read_text().split()) == dict.fromkeys(plan, 1)
    assert _stdout(db) == {
        "a": _lines_of("a", 300),
        "b": _lines_of("b", 300),
        "c": _lines_of("c", 300),
        "d": _lines_of("d", 550),
        "e": _lines_of("e", 550),
    }
    runs = query(
        db,
        "SELECT t.name, r.attempt, r.outcome, r.exit_code FROM runs r"
        " JOIN tasks t ON t.id = r.task_id ORDER BY t.name",
    )
    assert runs == [
        ("a", 1, "COMPLETED", 0),
        ("b", 1, "COMPLETED", 0),
        ("c", 1, "FAILED", 4),
        ("d", 1, "COMPLETED", 0),
        ("e", 1, "FAILED", 5),
    ]
    await wait_for(_gone(left.keeper), "the old keeper to leave")
    assert marker_processes(marker) == []


async def test_a_keeper_nobody_came_for_leaves_its_results_to_the_next_start(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"tui-adopt-{uuid.uuid4().hex[:10]}"
    effects, gate1, gate2 = tmp_path / "effects", tmp_path / "gate1", tmp_path / "gate2"
    once = {"retry": {"max_attempts": 1}}
    quick = shell_task("quick", _script(marker, "quick", effects, [gate1], 0), **once)
    # Still running when the keeper gives up: killed, and run again (its side effect, before
    # any gate, happens once per attempt).
    stuck = shell_task("stuck", _script(marker, "stuck", effects, [gate2], 0), **once)
    monkeypatch.setenv("TUI_KEEPER_WAIT", "2")  # the daemon, hence its keeper, inherit it
    left = await kill_9_daemon(
        db,
        [quick, stuck],
        until=_stored_to(db, ["quick", "stuck"], 50),
        what="line 50 stored",
        concurrency=2,
    )
    assert left.keeper is not None
    gate1.touch()
    await wait_for(_gone(left.keeper), "the keeper to give up")
    assert marker_processes(marker) == [], "what still ran at its deadline was killed"
    assert results_path(str(db), left.engine_id).exists()

    monkeypatch.delenv("TUI_KEEPER_WAIT")
    gate2.touch()
    remote = await ensure(db, concurrency=2)
    try:
        await _settled(remote, [quick, stuck])
    finally:
        await remote.aclose()
        await stop(db)
    assert Counter(effects.read_text().split()) == {"quick": 1, "stuck": 2}
    assert _stdout(db)["quick"] == _lines_of("quick", 300)
    runs = query(
        db,
        "SELECT t.name, r.attempt, r.outcome, r.exit_code FROM runs r"
        " JOIN tasks t ON t.id = r.task_id ORDER BY t.name, r.id",
    )
    assert runs == [
        ("quick", 1, "COMPLETED", 0),
        ("stuck", 1, "interrupted", None),
        ("stuck", 2, "COMPLETED", 0),
    ]


async def test_a_keeper_killed_too_takes_its_agents_along(db: Path, tmp_path: Path) -> None:
    marker = f"tui-adopt-{uuid.uuid4().hex[:10]}"
    effects, gate = tmp_path / "effects", tmp_path / "gate"
    # Its side effect only after the gate: only a process left behind could ever do it.
    script = (
        f": {marker}; (while :; do sleep 0.05; done) &"
        f' while [ ! -e "{gate}" ]; do sleep 0.02; done; echo held >> "{effects}"'
    )
    task = shell_task("held", script)
    left = await kill_9_daemon(
        db,
        [task],
        # Its pid rides in the next store transaction (within 20 ms when nothing else is due).
        until=lambda: len(marker_processes(marker)) >= 2 and bool(open_run_pids(db)),
        what="the script and its child, the pid stored",
    )
    assert left.keeper is not None
    assert marker_processes(marker), "the keeper keeps it for the next daemon"
    os.kill(left.keeper, signal.SIGKILL)
    await wait_for(lambda: not marker_processes(marker), "the guard to stop them")
    gate.touch()
    remote = await ensure(db, concurrency=1)
    try:
        await _settled(remote, [task])
    finally:
        await remote.aclose()
        await stop(db)
    assert effects.read_text() == "held\n"
    assert query(db, "SELECT attempt, outcome FROM runs ORDER BY id") == [
        (1, "interrupted"),
        (2, "COMPLETED"),
    ]


async def test_an_adopted_run_is_cancelled_as_any_other(db: Path, tmp_path: Path) -> None:
    marker = f"tui-adopt-{uuid.uuid4().hex[:10]}"
    effects, gate = tmp_path / "effects", tmp_path / "gate"
    task = shell_task("long", _script(marker, "long", effects, [gate], 0))
    left = await kill_9_daemon(
        db, [task], until=_stored_to(db, ["long"], 50), what="line 50 stored"
    )
    assert left.keeper is not None
    remote = await ensure(db, concurrency=1)
    try:
        rec = await remote.get(task.id)
        assert rec is not None and rec.state == State.RUNNING  # adopted: still its first run
        await remote.cancel(task.id)
        await _settled(remote, [task])
        rec = await remote.get(task.id)
        assert rec is not None and rec.state == State.CANCELLED
    finally:
        await remote.aclose()
        await stop(db)
    assert marker_processes(marker) == []
    await wait_for(_gone(left.keeper), "the old keeper to leave")
    assert effects.read_text() == "long\n"
    assert query(db, "SELECT attempt, outcome FROM runs") == [(1, "CANCELLED")]
    assert _stdout(db)["long"] == _lines_of("long", 50)


async def test_a_keeper_the_machine_has_not_run_since_the_kill_is_waited_for(
    db: Path, tmp_path: Path
) -> None:
    marker = f"tui-adopt-{uuid.uuid4().hex[:10]}"
    effects, gate = tmp_path / "effects", tmp_path / "gate"
    task = shell_task("slow", _script(marker, "slow", effects, [gate], 0))
    stopped: list[int] = []

    def stored_then_keeper_stopped() -> bool:
        # A loaded machine: the keeper is not run from the daemon's kill until the next
        # daemon recovers, so it has not seen the kill nor set up its socket.
        pids = open_run_pids(db)
        if not (pids and _stored_to(db, ["slow"], 50)()):
            return False
        keeper = int(Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(keeper, signal.SIGSTOP)
        stopped.append(keeper)
        return True

    log = daemon_paths(db).log
    try:
        left = await kill_9_daemon(
            db, [task], until=stored_then_keeper_stopped, what="line 50 stored"
        )
        assert left.keeper == stopped[0]
        path = keeper_socket(str(db), left.engine_id)
        assert path is not None and not path.exists()
        seen = log.read_text().count("waiting for it") if log.exists() else 0
        starting = asyncio.create_task(ensure(db, concurrency=1))
        # The next daemon says it waits for the keeper: only then is the keeper run again.
        await wait_for(
            lambda: log.read_text().count("waiting for it") > seen or starting.done(),
            "the next daemon to wait for the keeper",
        )
        if starting.done():
            await (await starting).aclose()  # a start that failed raises here, not below
            raise AssertionError("recovered without the keeper: its task runs again")
        os.kill(stopped[0], signal.SIGCONT)
        remote = await starting
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    try:
        rec = await remote.get(task.id)
        assert rec is not None and rec.state == State.RUNNING  # adopted: still its first run
        gate.touch()
        await _settled(remote, [task])
    finally:
        await remote.aclose()
        await stop(db)
    assert effects.read_text() == "slow\n"
    assert query(db, "SELECT attempt, outcome FROM runs") == [(1, "COMPLETED")]
    assert _stdout(db)["slow"] == _lines_of("slow", 300)
    await wait_for(_gone(left.keeper), "the old keeper to leave")
    assert marker_processes(marker) == []
