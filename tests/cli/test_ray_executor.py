"""The Ray executor against a real two-node Ray cluster on this machine (no mocks of Ray).

One cluster for the whole module (starting one takes 10–20 s on a loaded 2-core machine); the
test that kills the second node runs last. Skipped, with the reason, where `ray` is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks

pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install 'tui[ray]')")

from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.cli_support import cli_path, needs_cli
from tests.app.app_support import screen_text, until
from tests.cli.ray_cluster import RayCluster, start_cluster
from tests.conftest import owned_engine
from tests.conftest import shell_task as a_task
from tui.app.tui_app import TuiApp
from tui.app.widgets.question_panel import QuestionPanel
from tui.engine.ray_executor import RayExecutor
from tui.model.states import State
from tui.store.db import Store

needs_claude = needs_cli("claude")

RUN = 180.0  # seconds for one `tui run` on Ray (worker processes start on a loaded machine)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    c = start_cluster()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def rtui(tui: Tui, cluster: RayCluster) -> Tui:
    """`tui` with [executor] pointing at the test cluster (kind chosen per test)."""
    config = Path(os.environ["TUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[executor]\naddress = "{cluster.address}"\n')
    return tui


def _nodes_of_runs(tui: Tui) -> dict[str, list[tuple[str, str | None]]]:
    rows = tui.sql(
        "SELECT k.name, r.node, r.outcome FROM runs r JOIN tasks k ON k.id = r.task_id"
        " ORDER BY r.id"
    )
    out: dict[str, list[tuple[str, str | None]]] = {}
    for name, node, outcome in rows:
        out.setdefault(name, []).append((node, outcome))
    return out


def _printed(tui: Tui, name: str) -> list[str]:
    task_id = tui.by_name()[name]["id"]
    return [line.text for line in tui.output("task_id = ?", (task_id,))]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def test_dag_placed_by_resource_on_the_right_node(rtui: Tui, cluster: RayCluster) -> None:
    tasks = [
        shell_task("on-head", "echo node=$TUI_NODE_ID", resources={"custom": {"head_box": 1}}),
        shell_task(
            "on-worker",
            "echo node=$TUI_NODE_ID; echo to-stderr >&2",
            depends_on=["on-head"],
            resources={"num_cpus": 1, "memory": "64MiB", "custom": {"worker_box": 1}},
        ),
        shell_task(
            "back-on-head",
            "echo node=$TUI_NODE_ID",
            depends_on=["on-worker"],
            resources={"custom": {"head_box": 1}},
        ),
    ]
    res = rtui(
        "run", str(write_tasks(rtui.dir / "dag.yaml", tasks)), "--executor", "ray", timeout=RUN
    )
    assert res.returncode == 0, str(res)
    where = {"on-head": cluster.head, "on-worker": cluster.worker, "back-on-head": cluster.head}
    runs = _nodes_of_runs(rtui)
    for name, node in where.items():
        assert _printed(rtui, name)[0] == f"node={node.node_id}"
        assert runs[name] == [(node.node_id, "COMPLETED")]  # the node is stored with the run
    assert "to-stderr" in _printed(rtui, "on-worker")
    # The DAG's order held: each started after the one it depends on completed.
    order = [name for _, name, _, to, _ in rtui.transitions() if to == "RUNNING"]
    assert order == ["on-head", "on-worker", "back-on-head"]


def test_labels_place_a_task_on_the_node_started_with_them(rtui: Tui, cluster: RayCluster) -> None:
    tasks = [
        shell_task("in-eu", "echo node=$TUI_NODE_ID", resources={"labels": {"zone": "eu"}}),
        shell_task("in-us", "echo node=$TUI_NODE_ID", resources={"labels": {"zone": "us"}}),
        shell_task(
            "eu-gpu",
            "echo node=$TUI_NODE_ID",
            resources={"num_cpus": 1, "labels": {"zone": "eu", "box": "gpu"}},
        ),
    ]
    res = rtui(
        "run", str(write_tasks(rtui.dir / "labels.yaml", tasks)), "--executor", "ray", timeout=RUN
    )
    assert res.returncode == 0, str(res)
    runs = _nodes_of_runs(rtui)
    where = {"in-eu": cluster.worker, "in-us": cluster.head, "eu-gpu": cluster.worker}
    for name, node in where.items():
        assert _printed(rtui, name) == [f"node={node.node_id}"]
        assert runs[name] == [(node.node_id, "COMPLETED")]


@pytest.mark.parametrize(
    ("resources", "said"),
    [({"labels": {"zone": "mars"}}, "zone=mars"), ({"custom": {"moon_box": 1}}, "moon_box: 1")],
)
def test_a_task_no_node_can_take_says_why_waits_and_cancels(
    rtui: Tui, resources: dict[str, object], said: str
) -> None:
    # Its timeout counts from a node taking it, not while it waits for one.
    tasks = [shell_task("nowhere", "echo ran", resources=resources, timeout="1s")]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "no.yaml", tasks)), "--executor", "ray")
    reason = f"[tui] no live Ray node has {said}; waiting for one (`tui cancel` stops this task)"

    def told() -> bool:
        said = rtui.sql("SELECT text FROM output")  # none yet before the database exists
        return (reason,) in said

    wait_until(told, "the reason it waits", RUN, run)
    # Three times its timeout go by (the time a timeout is about, not a synchronisation).
    with pytest.raises(pytest.fail.Exception):
        wait_until(lambda: rtui.state_of("nowhere") != "RUNNING", "a timeout while waiting", 3, run)
    assert rtui.state_of("nowhere") == "RUNNING"
    res = rtui("cancel", "nowhere")  # ends the pending actor: no call to it that would wait
    assert res.returncode == 0, str(res)
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 1, out + errs
    assert rtui.state_of("nowhere") == "CANCELLED"
    assert "ran" not in _printed(rtui, "nowhere")


def test_output_and_a_question_from_a_worker(rtui: Tui, cluster: RayCluster) -> None:
    script = (
        'echo "before on $TUI_NODE_ID"; '
        'a=$(tui ask "Which database?" --option SQLite --option PostgreSQL); '
        'echo "answer: $a"; seq 1 5000 | tail -n 1'
    )
    tasks = [shell_task("asker", script, resources={"custom": {"worker_box": 1}})]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "ask.yaml", tasks)), "--executor", "ray")

    def question() -> str | None:
        res = rtui("questions", "--json")
        found = json.loads(res.stdout) if res.returncode == 0 else []
        return found[0]["id"] if found else None

    qid = wait_until(question, "the task's question", timeout=RUN, proc=run)
    assert rtui.state_of("asker") == "READY"
    res = rtui("answer", qid, "2")
    assert res.returncode == 0, str(res)
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 0, out + errs
    lines = _printed(rtui, "asker")
    assert lines == [f"before on {cluster.worker.node_id}", "answer: PostgreSQL", "5000"]


async def test_a_question_from_a_worker_answered_in_the_app(
    cluster: RayCluster, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app on the engine that runs the task on Ray: the question asked on the worker shows
    in the app's Questions tab, is answered from the keyboard, and the answer reaches the task
    there."""
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))
    script = (
        'echo "before on $TUI_NODE_ID"; '
        'a=$(tui ask "Which database?" --option SQLite --option PostgreSQL); echo "answer: $a"'
    )
    t = a_task("asker", script, resources={"labels": {"zone": "eu"}})
    executor = RayExecutor(cluster.address, kill_grace=1.0)
    async with owned_engine(store, executor=executor, kill_grace=1.0) as engine:
        await engine.submit([t])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = pilot.app.query_one(QuestionPanel)
            await until(pilot, lambda: panel.count == 1, "the question", rounds=int(RUN / 0.02))
            assert "tui — 1 question" in screen_text(pilot.app)
            await pilot.press("a", "2", "enter")
            await asyncio.wait_for(engine.wait_settled([t.id]), RUN)
            await until(pilot, lambda: panel.count == 0, "the question to go away")
        rec = await engine.get(t.id)
        assert rec is not None and rec.state == State.COMPLETED
        lines = [ln.text for ln in await store.read_output(t.id)]
    assert lines == [f"before on {cluster.worker.node_id}", "answer: PostgreSQL"]


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_cancel_and_timeout_kill_the_group_on_the_worker(
    rtui: Tui, cluster: RayCluster, how: str
) -> None:
    pidfile = rtui.dir / "bg.pid"
    # A background child in the task's group: it must go too, not only the script.
    script = f"sleep 300 & echo $! > {pidfile}; echo started on $TUI_NODE_ID; wait"
    extra = {"timeout": "3s"} if how == "timeout" else {}
    tasks = [shell_task("long", script, resources={"custom": {"worker_box": 1}}, **extra)]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "long.yaml", tasks)), "--executor", "ray")
    wait_until(
        lambda: pidfile.exists() and pidfile.read_text().strip(), "the task started", RUN, run
    )
    bg = int(pidfile.read_text())
    assert not _gone(bg)
    if how == "cancel":
        res = rtui("cancel", "long")
        assert res.returncode == 0, str(res)
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 1, out + errs
    assert rtui.state_of("long") == ("CANCELLED" if how == "cancel" else "TIMED_OUT")
    wait_until(lambda: _gone(bg), "the background sleep on the worker is gone", 15)
    assert _printed(rtui, "long")[0] == f"started on {cluster.worker.node_id}"


def test_forward_env_reaches_the_worker_and_is_stored_nowhere(
    rtui: Tui, cluster: RayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "fwd-value-6c1f0e"  # not shaped like a key: the test is about where it goes
    monkeypatch.setenv("TUI_TEST_FORWARDED", secret)
    monkeypatch.setenv("TUI_TEST_NOT_FORWARDED", secret)
    config = Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml"
    config.write_text(
        f'[executor]\nkind = "ray"\naddress = "{cluster.address}"\n'
        'forward_env = ["TUI_TEST_FORWARDED"]\n'
    )
    # The script names the variables only: the value is in no file the test wrote.
    script = (
        'echo "forwarded: ${#TUI_TEST_FORWARDED} characters"; '
        'echo "not forwarded: ${TUI_TEST_NOT_FORWARDED:-unset}"'
    )
    tasks = [shell_task("env", script, resources={"custom": {"worker_box": 1}})]
    res = rtui("run", str(write_tasks(rtui.dir / "env.yaml", tasks)), timeout=RUN)
    assert res.returncode == 0, str(res)
    assert _printed(rtui, "env") == [f"forwarded: {len(secret)} characters", "not forwarded: unset"]
    assert secret not in res.stdout + res.stderr
    for path in rtui.dir.glob("tui.db*"):
        assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("client", [False, True], ids=["gcs", "ray-client"])
def test_doctor_shows_the_nodes_their_free_resources_and_labels(
    rtui: Tui, cluster: RayCluster, client: bool
) -> None:
    config = Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml"
    address = cluster.client_address if client else cluster.address
    config.write_text(f'[executor]\nkind = "ray"\naddress = "{address}"\n')
    res = rtui("doctor", timeout=RUN)
    lines = [ln for ln in res.stdout.splitlines() if ln.split()[1:2] == ["executor"]]
    assert lines[0].startswith("ok") and "2 node(s)" in lines[0], res.stdout
    head = next(ln for ln in lines if cluster.head.node_id[:12] in ln)
    worker = next(ln for ln in lines if cluster.worker.node_id[:12] in ln)
    assert "(head)" in head and "head_box 2/2" in head and "CPU 2/2" in head
    assert "worker_box 2/2" in worker and "(head)" not in worker
    # The labels each node was started with, for a task's `resources: {labels:}`.
    assert head.endswith("; labels zone=us") and worker.endswith("; labels box=gpu, zone=eu")


def test_doctor_reports_a_cluster_it_cannot_reach(
    rtui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml"
    config.write_text(f'[executor]\nkind = "ray"\naddress = "127.0.0.1:{_closed_port()}"\n')
    res = rtui("doctor", timeout=RUN)
    assert res.returncode == 1
    line = next(ln for ln in res.stdout.splitlines() if ln.split()[1:2] == ["executor"])
    assert line.startswith("error") and "cannot reach the Ray cluster at '127.0.0.1:" in line, line


def test_kill_9_of_the_engine_leaves_nothing_running_on_the_worker(
    rtui: Tui, cluster: RayCluster
) -> None:
    pidfile = rtui.dir / "bg.pid"
    gate = rtui.dir / "gate"
    script = (
        f"if [ ! -e {gate} ]; then sleep 300 & echo $! > {pidfile}; wait; fi; "
        "echo done on $TUI_NODE_ID"
    )
    tasks = [shell_task("k9", script, resources={"custom": {"worker_box": 1}})]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "k9.yaml", tasks)), "--executor", "ray")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), "started", RUN, run)
    bg = int(pidfile.read_text())
    run.kill()  # SIGKILL: the driver goes, and with it the actors it owns
    run.communicate(timeout=RUN)
    wait_until(lambda: _gone(bg), "the task's processes on the worker are gone", 30)
    gate.touch()
    res = rtui("run", "--executor", "ray", timeout=RUN)  # carries on what was left
    assert res.returncode == 0, str(res)
    runs = _nodes_of_runs(rtui)["k9"]
    assert [outcome for _, outcome in runs] == ["interrupted", "COMPLETED"]
    assert _printed(rtui, "k9") == [f"done on {cluster.worker.node_id}"]


def test_a_cluster_that_does_not_answer_holds_tasks_back_and_says_why(
    rtui: Tui,
) -> None:
    config = Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml"
    address = f"127.0.0.1:{_closed_port()}"
    config.write_text(f'[executor]\nkind = "ray"\naddress = "{address}"\n')
    tasks = [shell_task("held", "echo ran", retry={"max_attempts": 1}, timeout="1s")]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "held.yaml", tasks)))

    def said() -> bool:
        return any("waiting for it" in line for line in _printed(rtui, "held"))

    wait_until(lambda: rtui.state_of("held") == "RUNNING" and said(), "the wait is said", RUN, run)
    (line,) = _printed(rtui, "held")
    assert f"cannot reach the Ray cluster at '{address}'" in line
    # Nothing was placed, and the timeout does not count while nothing runs.
    assert rtui.state_of("held") == "RUNNING" and rtui.by_name()["held"]["attempts"] == 1
    assert rtui("cancel", "held").returncode == 0
    out, errs = run.communicate(timeout=RUN)
    assert rtui.state_of("held") == "CANCELLED", out + errs
    assert "ran" not in _printed(rtui, "held")


def test_kill_9_of_the_ray_driver_interrupts_the_run_and_the_engine_carries_on(
    rtui: Tui, cluster: RayCluster
) -> None:
    gate, pidfile = rtui.dir / "gate", rtui.dir / "bg.pid"
    script = (
        f"if [ ! -e {gate} ]; then touch {gate}; sleep 300 & echo $! > {pidfile}; wait; fi; "
        "echo done on $TUI_NODE_ID"
    )
    tasks = [shell_task("d9", script, resources={"custom": {"worker_box": 1}})]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "d9.yaml", tasks)), "--executor", "ray")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), "started", RUN, run)
    bg = int(pidfile.read_text())
    # This `tui run`'s driver: another test run on the machine may have one of its own.
    [driver] = [p for p in marker_processes("tui.engine.ray_driver") if _parent(p) == run.pid]
    os.kill(driver, signal.SIGKILL)
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 0, out + errs  # the engine lived on, with a new driver
    assert [outcome for _, outcome in _nodes_of_runs(rtui)["d9"]] == ["interrupted", "COMPLETED"]
    assert _printed(rtui, "d9") == [
        "[tui] the Ray driver process exited (-9); run interrupted",  # said, in its output
        f"done on {cluster.worker.node_id}",
    ]
    wait_until(lambda: _gone(bg), "the first run's process on the worker is gone", 30)


def test_ray_client_address_places_a_task_and_carries_its_question(
    rtui: Tui, cluster: RayCluster
) -> None:
    """`ray://HOST:PORT` (Ray Client, the head's client server): no streaming generators
    there, so batches are asked for one at a time; the same output, question and node."""
    config = Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml"
    config.write_text(f'[executor]\nkind = "ray"\naddress = "{cluster.client_address}"\n')
    script = (
        'echo "before on $TUI_NODE_ID"; '
        'a=$(tui ask "Which database?" --option SQLite --option PostgreSQL); '
        'echo "answer: $a"; seq 1 5000 | tail -n 1'
    )
    tasks = [shell_task("client", script, resources={"custom": {"worker_box": 1}})]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "client.yaml", tasks)))

    def question() -> str | None:
        res = rtui("questions", "--json")
        found = json.loads(res.stdout) if res.returncode == 0 else []
        return found[0]["id"] if found else None

    qid = wait_until(question, "the task's question", timeout=RUN, proc=run)
    assert rtui("answer", qid, "1").returncode == 0
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 0, out + errs
    assert _without_waits(_printed(rtui, "client")) == [
        f"before on {cluster.worker.node_id}",
        "answer: SQLite",
        "5000",
    ]
    assert _nodes_of_runs(rtui)["client"] == [(cluster.worker.node_id, "COMPLETED")]


def _without_waits(lines: list[str]) -> list[str]:
    """``lines`` without tui's notes of a cluster that did not answer for a while, each
    closed by "answers again". Ray's client server sometimes fails to start its first
    per-client server ("Starting Ray client server failed") and the next try works: the
    task then waits and goes on, as it should."""
    waits = [i for i, ln in enumerate(lines) if ln.startswith("[tui] cannot reach the Ray cluster")]
    back = [i for i, ln in enumerate(lines) if ln == "[tui] the Ray cluster answers again"]
    assert len(back) == len(waits) and all(w < b for w, b in zip(waits, back, strict=True)), lines
    drop = set(waits) | set(back)
    return [ln for i, ln in enumerate(lines) if i not in drop]


@needs_claude
def test_claude_cli_on_the_second_node_asks_and_completes(
    rtui: Tui, cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real claude CLI, on the worker node, against the scripted model server; its key
    reaches the node as a user's would, through `forward_env`."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    (Path(os.environ["TUI_CONFIG_DIR"]) / "config.toml").write_text(
        f'[executor]\naddress = "{cluster.address}"\nforward_env = ["ANTHROPIC_API_KEY"]\n'
    )
    question = {
        "question": "Which database should the service use?",
        "header": "Database",
        "multiSelect": False,
        "options": [
            {"label": "SQLite", "description": "Embedded"},
            {"label": "PostgreSQL", "description": "Server"},
        ],
    }
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    with ModelServer() as model:
        model.script(
            "zr-ray",
            [
                tool_use("AskUserQuestion", {"questions": [question]}, say="Let me ask."),
                tool_use("Bash", {"command": "echo bash-ran-on-$TUI_NODE_ID"}),
                text("Using the answer."),
            ],
        )
        task = {
            "name": "claude-on-worker",
            "resources": {"custom": {"worker_box": 1}},
            "agent": {
                "type": "claude",
                "instructions": "zr-ray: pick a database",
                "project_dir": str(project),
                "skip_planning": True,
                "allowed_tools": ["Bash"],
                "env": {
                    "TUI_CLAUDE_BIN": str(cli_path("claude")),
                    "ANTHROPIC_BASE_URL": model.url,
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "HOME": str(home),
                },
            },
        }
        run = rtui.popen(
            "run", str(write_tasks(rtui.dir / "claude.yaml", [task])), "--executor", "ray"
        )

        def asked() -> str | None:
            res = rtui("questions", "--json")
            found = json.loads(res.stdout) if res.returncode == 0 else []
            return found[0]["id"] if found else None

        qid = wait_until(asked, "claude's question from the worker", timeout=RUN, proc=run)
        assert rtui.state_of("claude-on-worker") == "READY"
        res = rtui("answer", qid, "2")
        assert res.returncode == 0, str(res)
        out, errs = run.communicate(timeout=RUN)
        assert run.returncode == 0, out + errs
        [result] = [
            r for r in model.main_requests("zr-ray")[1].tool_results() if "Which database" in str(r)
        ]
    assert '"Which database should the service use?"="PostgreSQL"' in str(result["content"])
    assert _nodes_of_runs(rtui)["claude-on-worker"] == [(cluster.worker.node_id, "COMPLETED")]
    lines = _printed(rtui, "claude-on-worker")
    assert "Let me ask." in lines and "Using the answer." in lines
    assert any(f"bash-ran-on-{cluster.worker.node_id}" in ln for ln in lines), lines


def test_worker_node_dies_mid_run_task_requeued_and_completed_on_head(
    rtui: Tui, cluster: RayCluster
) -> None:
    """Runs last: the second node stays dead for the rest of the module."""
    release = rtui.dir / "release"
    pidfile = rtui.dir / "victim.pid"
    # The head's one `shared` slot is held, so the victim's first attempt lands on the worker.
    blocker = shell_task(
        "blocker",
        f"while [ ! -e {release} ]; do sleep 0.05; done",
        resources={"custom": {"shared": 1, "head_box": 1}},
    )
    victim = shell_task(
        "victim",
        f'echo "on $TUI_NODE_ID attempt $TUI_ATTEMPT"; '
        f'if [ "$TUI_NODE_ID" = "{cluster.worker.node_id}" ]; then '
        f"sleep 300 & echo $! > {pidfile}; wait; fi",
        resources={"custom": {"shared": 1}},
    )
    run = rtui.popen(
        "run", str(write_tasks(rtui.dir / "blocker.yaml", [blocker])), "--executor", "ray"
    )
    wait_until(lambda: rtui.state_of("blocker") == "RUNNING", "the blocker runs", RUN, run)
    wait_until(lambda: _nodes_of_runs(rtui).get("blocker", [("", "")])[0][0], "placed", RUN, run)
    # Handed to the `tui run` that owns the database (this one follows it to its end).
    follow = rtui.popen("run", str(write_tasks(rtui.dir / "victim.yaml", [victim])))
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), "victim on worker", RUN)
    bg = int(pidfile.read_text())
    cluster.kill_worker_node()
    release.touch()
    for proc in (follow, run):
        out, errs = proc.communicate(timeout=RUN)
        assert proc.returncode == 0, out + errs
    runs = _nodes_of_runs(rtui)["victim"]
    assert runs[0] == (cluster.worker.node_id, "interrupted")
    assert runs[-1] == (cluster.head.node_id, "COMPLETED")
    victim_row = rtui.by_name()["victim"]
    assert victim_row["state"] == "COMPLETED"
    wait_until(lambda: _gone(bg), "the victim's process on the dead node is gone", 15)
    reasons = [r for _, name, _, to, r in rtui.transitions() if name == "victim" and to == "QUEUED"]
    assert "interrupted" in reasons


def test_head_goes_away_engine_lives_and_placement_resumes_with_a_new_head(
    rtui: Tui, cluster: RayCluster
) -> None:
    """Runs after the worker node's death: the head is stopped mid-run, then started again."""
    pidfile = rtui.dir / "first.pid"
    old_head = cluster.head.node_id
    script = (
        'echo "on $TUI_NODE_ID"; '
        f'if [ "$TUI_NODE_ID" = "{old_head}" ]; then sleep 300 & echo $! > {pidfile}; wait; fi'
    )
    tasks = [
        shell_task("before", "echo stored before"),
        # One attempt only: the interrupted run must not use it.
        shell_task(
            "through",
            script,
            depends_on=["before"],
            resources={"custom": {"head_box": 1}},
            retry={"max_attempts": 1},
        ),
    ]
    run = rtui.popen("run", str(write_tasks(rtui.dir / "head.yaml", tasks)), "--executor", "ray")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), "started", RUN, run)
    bg = int(pidfile.read_text())
    cluster.stop_head()

    def waiting() -> bool:
        return any("waiting for it" in line for line in _printed(rtui, "through"))

    # The engine lives on: the run is interrupted, the task queued again and held, saying why.
    wait_until(waiting, "the task says it waits for the cluster", RUN, run)
    assert run.poll() is None
    # The next attempt is open but placed nowhere yet. One sent to the old driver before it
    # knew its head was gone is interrupted too (the race is the driver's to lose; such an
    # attempt ran nothing and, interrupted, used no attempt): any number of those before it.
    first, *between, opened = _nodes_of_runs(rtui)["through"]
    assert first == (old_head, "interrupted") and opened == ("", None), (first, between, opened)
    assert all(outcome == "interrupted" for _, outcome in between), between
    line = next(ln for ln in _printed(rtui, "through") if "waiting for it" in ln)
    assert f"cannot reach the Ray cluster at '{cluster.address}'" in line
    wait_until(lambda: _gone(bg), "the first run's process on the stopped head is gone", 60)
    # Stored state is intact: the completed task and the first run's output.
    assert _printed(rtui, "before") == ["stored before"]
    assert rtui.state_of("before") == "COMPLETED"

    cluster.restart_head()
    out, errs = run.communicate(timeout=RUN)
    assert run.returncode == 0, out + errs
    first, *between, last = _nodes_of_runs(rtui)["through"]
    assert first == (old_head, "interrupted"), first
    assert all(outcome == "interrupted" for _, outcome in between), between
    assert last == (cluster.head.node_id, "COMPLETED"), last
    printed = _printed(rtui, "through")
    assert printed[0] == f"on {old_head}"
    assert "[tui] the Ray cluster answers again" in printed
    assert printed[-1] == f"on {cluster.head.node_id}"
    reasons = [r for _, n, _, to, r in rtui.transitions() if n == "through" and to == "QUEUED"]
    assert "interrupted" in reasons
