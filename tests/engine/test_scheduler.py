import asyncio
import os
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.conftest import shell_task, stored, wait_state
from tests.engine.fake_agent import GatedAdapter
from tui.engine import api
from tui.engine.clock import FakeClock
from tui.engine.events import Cursor, OutputBatch
from tui.engine.retry import retry_delay
from tui.engine.scheduler import Engine, EngineBusy, EngineError
from tui.model.states import State
from tui.model.task import RetryConfig, Task
from tui.procs.groups import group_members
from tui.store.db import Store


def fake_task(name: str, type_: str = "claude", **kw: object) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": type_, "instructions": "x"}, **kw})


async def next_started(agent: GatedAdapter) -> str:
    return await asyncio.wait_for(agent.started.get(), 10)


async def test_priority_then_fifo(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, concurrency=1, adapters={"claude": agent}) as engine:
        tasks = [
            fake_task("low", priority="low"),
            fake_task("n1"),
            fake_task("high", priority="high"),
            fake_task("n2", priority="normal"),
            fake_task("critical", priority="critical"),
        ]
        await engine.submit(tasks)
        for _ in tasks:
            name = await next_started(agent)
            agent.finish(name)
        await engine.wait_settled(t.id for t in tasks)
    assert agent.order == ["critical", "high", "n1", "n2", "low"]


async def test_global_and_per_agent_limits_are_never_exceeded(store: Store) -> None:
    # Stand-ins registered under real agent types, so the limits key on real names.
    a, b = GatedAdapter("claude"), GatedAdapter("gemini")
    async with Engine(
        store, concurrency=3, agent_limits={"claude": 1}, adapters={"claude": a, "gemini": b}
    ) as engine:
        tasks = [fake_task(f"a{i}", "claude") for i in range(3)] + [
            fake_task(f"b{i}", "gemini") for i in range(4)
        ]
        await engine.submit(tasks)
        # Three start at once: one "a" (its limit) and two "b" (the global limit).
        started = {await next_started(a), await next_started(b), await next_started(b)}
        assert len(started) == 3
        assert a.started.empty() and b.started.empty()
        for t in tasks:
            (a if t.agent.type == "claude" else b).finish(t.name)
        await engine.wait_settled(t.id for t in tasks)
    assert a.max_running == 1
    assert a.max_running + b.max_running <= 3 and b.max_running == 2


async def test_dependents_wait_and_run_in_order(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, concurrency=4, adapters={"claude": agent}) as engine:
        root = fake_task("root")
        left, right = (
            fake_task("left", depends_on=[root.id]),
            fake_task("right", depends_on=[root.id]),
        )
        join = fake_task("join", depends_on=[left.id, right.id])
        await engine.submit([join, left, right, root])
        assert await next_started(agent) == "root"
        rec = await engine.get(join.id)
        assert rec is not None and rec.state == State.PENDING
        agent.finish("root")
        assert {await next_started(agent), await next_started(agent)} == {"left", "right"}
        agent.finish("left")
        await wait_state(engine, left.id, State.COMPLETED)
        assert (await stored(engine, join.id)).state == State.PENDING
        agent.finish("right")
        assert await next_started(agent) == "join"
        agent.finish("join")
        await engine.wait_settled([join.id])


async def test_final_failure_cancels_dependents_naming_it(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, adapters={"claude": agent}) as engine:
        build = fake_task("build")
        test = fake_task("test", depends_on=[build.id])
        deploy = fake_task("deploy", depends_on=[test.id])
        await engine.submit([build, test, deploy])
        await next_started(agent)
        agent.finish("build", State.FAILED, error="exit code 2")
        await engine.wait_settled([build.id, test.id, deploy.id])
        t, d = await engine.get(test.id), await engine.get(deploy.id)
    assert t is not None and t.state == State.CANCELLED and "build" in t.reason
    assert d is not None and d.state == State.CANCELLED and "test" in d.reason


async def test_retry_waits_the_backoff_on_the_clock(store: Store) -> None:
    agent = GatedAdapter()
    clock = FakeClock()
    policy = {"max_attempts": 3, "backoff": "exponential", "delay": "10s"}
    async with Engine(
        store, adapters={"claude": agent}, clock=clock, rng=random.Random(7)
    ) as engine:
        t = fake_task("flaky", retry=policy)
        await engine.submit([t])
        await next_started(agent)
        agent.finish("flaky", State.FAILED, error="boom")
        await wait_state(engine, t.id, State.FAILED)
        rec = await engine.get(t.id)
        assert rec is not None and rec.retry_at is not None
        expected = retry_delay(RetryConfig.model_validate(policy), 1, random.Random(7))
        assert rec.retry_at == pytest.approx(clock.now() + expected)
        assert 8 <= expected <= 12  # 10s ± 20%
        clock.advance(expected - 0.5)
        await asyncio.sleep(0)
        assert (await stored(engine, t.id)).state == State.FAILED
        clock.advance(1)
        assert await next_started(agent) == "flaky"
        agent.finish("flaky", State.FAILED)
        await wait_state(engine, t.id, State.FAILED)
        rec = await engine.get(t.id)
        assert rec is not None and rec.retry_at is not None
        assert 16 <= rec.retry_at - clock.now() <= 24  # 2nd delay doubles
        clock.advance(24)
        await next_started(agent)
        agent.finish("flaky", State.FAILED)
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.FAILED and rec.attempts == 3
    assert rec.retry_at is None


def test_retry_delay_formulas() -> None:
    class Mid(random.Random):
        def random(self) -> float:
            return 0.5  # no jitter

    lin = RetryConfig(max_attempts=5, backoff="linear", delay=2)
    exp = RetryConfig(max_attempts=5, backoff="exponential", delay=2)
    assert [retry_delay(lin, n, Mid()) for n in (1, 2, 3)] == [2, 4, 6]
    assert [retry_delay(exp, n, Mid()) for n in (1, 2, 3, 4)] == [2, 4, 8, 16]
    # Unset is exponential (issue 12, as the seed's RetryConfig); `none` keeps the delay.
    assert retry_delay(RetryConfig(delay=3), 4, Mid()) == 24
    assert retry_delay(RetryConfig(delay=3, backoff="none"), 4, Mid()) == 3
    for _ in range(100):
        assert 1.6 <= retry_delay(exp, 1, random.Random()) <= 2.4


async def test_manual_retry_needs_dependencies_done(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, adapters={"claude": agent}) as engine:
        a = fake_task("a")
        b = fake_task("b", depends_on=[a.id])
        await engine.submit([a, b])
        await next_started(agent)
        agent.finish("a", State.FAILED)
        await engine.wait_settled([a.id, b.id])
        with pytest.raises(EngineError, match="waits on a"):
            await engine.retry(b.id)
        assert "queued" in await engine.retry(a.id)
        await next_started(agent)
        agent.finish("a")
        await wait_state(engine, a.id, State.COMPLETED)
        with pytest.raises(EngineError, match="a is done; only failed"):
            await engine.retry(a.id)


async def test_manual_approval_keeps_tasks_pending(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, adapters={"claude": agent}, auto_approve=False) as engine:
        t = fake_task("needs-ok")
        await engine.submit([t])
        assert (await stored(engine, t.id)).state == State.PENDING
        assert agent.started.empty()
        await engine.approve(t.id)
        await next_started(agent)
        agent.finish("needs-ok")
        await engine.wait_settled([t.id])


async def test_a_submission_can_ask_for_manual_approval_of_its_own_tasks(store: Store) -> None:
    agent = GatedAdapter()
    async with Engine(store, adapters={"claude": agent}) as engine:  # auto-approves
        gated, free = fake_task("gated"), fake_task("free")
        # As it arrives over the socket: the JSON form of the typed message.
        submit = api.parse_request(
            {"op": "submit", "tasks": [gated.model_dump(mode="json")], "approved": False}
        )
        reply = await engine.handle(submit)
        assert isinstance(reply, api.Submitted) and reply.ids == [gated.id]
        await engine.submit([free])
        assert await next_started(agent) == "free"
        assert (await stored(engine, gated.id)).state == State.PENDING
        agent.finish("free")
        await engine.approve(gated.id)
        assert await next_started(agent) == "gated"
        agent.finish("gated")
        await engine.wait_settled([gated.id, free.id])
        with pytest.raises(ValidationError, match="approved"):
            api.parse_request({"op": "submit", "tasks": [], "approved": "no"})


async def test_event_stream_replays_then_goes_live_without_gap_or_duplicate(
    store: Store,
) -> None:
    agent = GatedAdapter()
    async with Engine(store, adapters={"claude": agent}) as engine:
        first = fake_task("first")
        await engine.submit([first])
        await next_started(agent)
        seen: list[int] = []
        done = asyncio.Event()
        second = fake_task("second")

        async def viewer() -> None:
            async for ev in engine.events(Cursor()):
                if isinstance(ev, OutputBatch):
                    continue
                seen.append(ev.id)
                if ev.task_id == second.id and ev.to_state == State.COMPLETED:
                    done.set()
                    return

        task = asyncio.create_task(viewer())
        agent.finish("first")
        await engine.submit([second])
        await next_started(agent)
        agent.finish("second")
        await asyncio.wait_for(done.wait(), 10)
        await task
    stored = [e.id for e in await store.read_events(0)]
    assert seen == sorted(set(seen))  # in order, no duplicate
    assert seen == stored[: len(seen)]  # no gap


async def test_second_engine_on_the_same_database_is_refused(tmp_path: Path) -> None:
    a = await Store.open(tmp_path / "t.db")
    b = await Store.open(tmp_path / "t.db")
    async with Engine(a, adapters={}):
        with pytest.raises(EngineBusy, match="already running"):
            await Engine(b, adapters={}).start()
    await a.close()
    await b.close()


# -- real shell processes -----------------------------------------------------------------


async def test_shell_exit_codes_map_to_states(store: Store) -> None:
    async with Engine(store) as engine:
        ok, bad = shell_task("ok", "exit 0"), shell_task("bad", "exit 3")
        await engine.submit([ok, bad])
        await engine.wait_settled([ok.id, bad.id])
        assert (await stored(engine, ok.id)).state == State.COMPLETED
        rec = await engine.get(bad.id)
    assert rec is not None and rec.state == State.FAILED and "exit code 3" in rec.reason
    runs = await store.runs(bad.id)
    assert runs[0].exit_code == 3 and runs[0].outcome == "FAILED"


async def test_output_capture_edge_cases(store: Store) -> None:
    script = r"""
printf 'plain\n'
printf '\033[31mred\033[0m\n'
printf '10%%\r50%%\r100%%\n'
printf 'crlf\r\n'
printf 'bad \377 byte\n'
printf 'to stderr\n' >&2
python3 -c "print('x' * 40000)"
printf 'no newline at end'
"""
    async with Engine(store) as engine:
        t = shell_task("capture", script)
        await engine.submit([t])
        await engine.wait_settled([t.id])
    lines = await store.read_output(t.id)
    out = [ln.text for ln in lines if ln.stream == 1]
    err = [ln.text for ln in lines if ln.stream == 2]
    assert out[:5] == ["plain", "\x1b[31mred\x1b[0m", "100%", "crlf", "bad \ufffd byte"]
    assert err == ["to stderr"]
    long = out[5:-1]
    assert [len(x) for x in long] == [16384, 16384, 40000 - 2 * 16384]
    assert out[-1] == "no newline at end"
    assert [ln.seq for ln in lines] == sorted(ln.seq for ln in lines)


async def _grandchild_script(tmp_path: Path) -> tuple[str, Path]:
    pidfile = tmp_path / "pids"
    script = f"""
sleep 300 & echo $! >> {pidfile}
(trap '' TERM; sleep 300) & echo $! >> {pidfile}
echo started
sleep 300
"""
    return script, pidfile


async def test_timeout_kills_the_whole_group(store: Store, tmp_path: Path) -> None:
    script, pidfile = await _grandchild_script(tmp_path)
    async with Engine(store, kill_grace=0.5) as engine:
        t = shell_task("slow", script, timeout="1s")
        await engine.submit([t])
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.TIMED_OUT
    assert "timed out after 1s" in rec.reason
    run = (await store.runs(t.id))[0]
    assert run.pgid is not None and group_members(run.pgid) == []
    assert len(pidfile.read_text().split()) == 2


async def test_cancel_kills_the_whole_group(store: Store, tmp_path: Path) -> None:
    script, _ = await _grandchild_script(tmp_path)
    async with Engine(store, kill_grace=0.5) as engine:
        t = shell_task("long", script)
        await engine.submit([t])
        async for ev in engine.events(Cursor()):
            if isinstance(ev, OutputBatch) and any(ln.text == "started" for ln in ev.lines):
                break
        assert "cancelled" in await engine.cancel(t.id)
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.CANCELLED
    run = (await store.runs(t.id))[0]
    assert run.pgid is not None and group_members(run.pgid) == []


async def test_background_job_left_running_does_not_hold_the_task(store: Store) -> None:
    async with Engine(store) as engine:
        t = shell_task("bg", "sleep 300 & echo done")
        await engine.submit([t])
        await asyncio.wait_for(engine.wait_settled([t.id]), 20)
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    run = (await store.runs(t.id))[0]
    assert run.pgid is not None and group_members(run.pgid) == []


async def test_recovery_kills_orphans_and_retries(tmp_path: Path) -> None:
    import os
    import subprocess

    from tui.procs.process import proc_start_time

    path = tmp_path / "t.db"
    store = await Store.open(path)
    t = shell_task("victim", "echo again")  # max_attempts 1: the interruption is not one
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(t.id, "dead-engine")
    assert began is not None
    # The "agent" the dead engine left behind: its own process group, still running.
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    await store.set_run_process(began[0], orphan.pid, orphan.pid, proc_start_time(orphan.pid))
    async with Engine(store) as engine:
        assert orphan.wait(timeout=10) == -9
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED and rec.attempts == 2
    assert rec.attempt_in_round == 1
    moves = [(f, to, why) for _, f, to, why, _ in await store.transitions(t.id)]
    assert moves[2] == ("RUNNING", "QUEUED", "interrupted")
    runs = await store.runs(t.id)
    assert runs[0].outcome == "interrupted" and runs[1].outcome == "COMPLETED"
    assert os.path.exists(path)
    await store.close()


async def test_an_engine_stopped_mid_run_queues_the_task_again_without_using_an_attempt(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    store = await Store.open(path)
    t = shell_task("long", 'if [ "$TUI_ATTEMPT" = 1 ]; then sleep 60; fi; echo done')
    async with Engine(store) as engine:
        await engine.submit([t])
        await wait_state(engine, t.id, State.RUNNING)
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.QUEUED and rec.reason == "interrupted"
    async with Engine(store) as engine:  # the next engine carries it on
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED and rec.attempt_in_round == 1
    runs = await store.runs(t.id)
    assert [r.outcome for r in runs] == ["interrupted", "COMPLETED"]
    await store.close()


async def test_recovery_finds_a_run_process_whose_pid_was_never_stored(tmp_path: Path) -> None:
    import subprocess

    store = await Store.open(tmp_path / "t.db")
    t = shell_task("victim", "echo again")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(t.id, "dead-engine")
    assert began is not None
    # What a kill -9 right after the spawn leaves: the process, marked, and no pid stored.
    marked = {"TUI_ENGINE_ID": "dead-engine", "TUI_RUN_ID": str(began[0])}
    orphan = subprocess.Popen(
        ["sleep", "300"], start_new_session=True, env={**os.environ, **marked}
    )
    other = subprocess.Popen(  # another run's process: left alone
        ["sleep", "300"],
        start_new_session=True,
        env={**os.environ, **marked, "TUI_ENGINE_ID": "another-engine"},
    )
    try:
        async with Engine(store) as engine:
            assert orphan.wait(timeout=10) == -9
            await engine.wait_settled([t.id])
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    await store.close()
