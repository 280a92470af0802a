"""Subtasks in the app: the task list as a tree (fold and unfold from the keyboard, a parent's
progress), and the DAG grouping a parent's children — on a real engine running shell tasks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from tests.app import app_support
from tests.app.app_support import screen_text, visible_text
from tui.app.tui_app import TuiApp
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.task_list import TaskList
from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.task import Task

SIZE = (120, 40)


async def until(pilot: Pilot, condition: Callable[[], bool], what: str, rounds: int = 1500) -> None:
    """``app_support.until`` with room for a loaded machine (shell tasks start slowly under
    load), saying what the list showed when it gives up."""
    try:
        await app_support.until(pilot, condition, what, rounds)
    except AssertionError as e:
        app = pilot.app
        assert isinstance(app, TuiApp)
        raise AssertionError(f"{e}; the list shows:\n" + "\n".join(rows(app))) from None


def make_app(engine: Engine) -> TuiApp:
    return TuiApp(engine, osc="off", remember_theme=False, toasts=False)


def research(gate: Path) -> list[Task]:
    """`research` with two children; `web` finishes at once, `papers` when ``gate`` exists."""
    return load_task_text(
        f"""
tasks:
  - name: first
    agent: {{type: shell, instructions: "true"}}
  - name: research
    subtasks:
      - name: web
        agent: {{type: shell, instructions: "echo web"}}
      - name: papers
        agent:
          type: shell
          instructions: "while [ ! -e {gate} ]; do sleep 0.05; done; echo papers"
  - name: report
    depends_on: [research]
    agent: {{type: shell, instructions: "echo report"}}
""",
        "tree.yaml",
    ).tasks


def rows(app: TuiApp) -> list[str]:
    """The task list's rows as shown (header left out), trailing blanks cut."""
    lines = visible_text(app.query_one(TaskList)).splitlines()[1:]
    return [line.rstrip() for line in lines if line.strip()]


def names(app: TuiApp) -> list[str]:
    """The NAME cell of every row: what follows the state symbol and word."""
    out = []
    for line in rows(app):
        cells = [c for c in line.split("  ") if c.strip()]
        out.append(cells[1].strip() if len(cells) > 1 else "")
    return out


def row_of(app: TuiApp, text: str) -> str:
    return next((r for r in rows(app) if text in r), "")


async def test_children_fold_and_unfold_with_space_and_the_parent_counts_them(
    engine: Engine, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    tasks = research(gate)
    await engine.submit(tasks)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        tasks_list = app.query_one(TaskList)
        await until(pilot, lambda: "▾ research 1/2" in row_of(app, "research"), "1 of 2 done")
        shown = ["first", "▾ research 1/2", "web", "papers", "report"]
        assert [n.strip() for n in names(app)] == shown
        # A child's name is indented to its parent's name (after the ▾).
        assert row_of(app, "web").index("web") == row_of(app, "research").index("research")
        assert "Fold" in screen_text(app)  # the key is in the footer once subtasks exist
        await pilot.press("j")  # research
        assert tasks_list.selected_id == tasks[1].id
        await pilot.press("space")
        await until(pilot, lambda: "web" not in names(app), "research folded")
        assert "▸ research 1/2" in row_of(app, "research")
        assert "papers" not in names(app)
        # Folded, the parent's count still follows its children.
        gate.touch()
        await until(pilot, lambda: "▸ research 2/2" in row_of(app, "research"), "2 of 2")
        await until(pilot, lambda: "✓" in row_of(app, "report"), "report ran")
        assert "papers" not in names(app), "a live update unfolded the parent"
        await pilot.press("space")
        await until(pilot, lambda: "papers" in names(app), "research unfolded")
        assert "▾ research 2/2" in row_of(app, "research")
        await engine.wait_settled([t.id for t in tasks])


async def test_arrows_fold_and_move_between_parent_and_children(
    engine: Engine, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    tasks = research(gate)
    first, parent, web, papers, _ = tasks
    await engine.submit(tasks)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        tasks_list = app.query_one(TaskList)
        await until(pilot, lambda: "papers" in names(app), "the tree")
        await pilot.press("j", "right")  # research is unfolded: right goes to its first child
        assert tasks_list.selected_id == web.id
        await pilot.press("j", "left")  # from a child, left goes to its parent
        assert tasks_list.selected_id == parent.id
        await pilot.press("left")  # on the parent, left folds it
        await until(pilot, lambda: "web" not in names(app), "folded")
        assert tasks_list.selected_id == parent.id
        await pilot.press("right")
        await until(pilot, lambda: "web" in names(app), "unfolded")
        assert tasks_list.selected_id == parent.id
        # Folding every parent while a child is selected selects that parent.
        tasks_list.select_id(papers.id)
        await pilot.press("minus")
        await until(pilot, lambda: "papers" not in names(app), "all folded")
        assert tasks_list.selected_id == parent.id
        await pilot.press("plus")
        await until(pilot, lambda: "papers" in names(app), "all unfolded")
        assert tasks_list.selected_id == parent.id
        await pilot.press("k")
        assert tasks_list.selected_id == first.id
        gate.touch()
        await engine.wait_settled([t.id for t in tasks])


async def test_filters_and_sorts_keep_children_under_their_parent(
    engine: Engine, tmp_path: Path
) -> None:
    tasks = research(tmp_path / "gate")
    await engine.submit(tasks)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        tasks_list = app.query_one(TaskList)
        await until(pilot, lambda: "▶" in row_of(app, "papers"), "papers running")
        await until(pilot, lambda: "▾ research 1/2" in row_of(app, "research"), "web done")
        await pilot.press("s", "s")  # by name: children stay under research, sorted
        await until(pilot, lambda: tasks_list.sort_key == "name", "sorted by name")
        await until(
            pilot,
            lambda: (
                [n.strip() for n in names(app)]
                == ["first", "report", "▾ research 1/2", "papers", "web"]
            ),
            "sorted by name, children under their parent",
        )
        await pilot.press("colon", *"state:running", "enter")
        # The running child, under its parent (which does not match, and is not counted).
        await until(
            pilot,
            lambda: [n.strip() for n in names(app)] == ["▾ research 1/2", "papers"],
            "the running child under its parent",
        )
        assert str(tasks_list.border_title).startswith("Tasks 1/5")
        (tmp_path / "gate").touch()
        await engine.wait_settled([t.id for t in tasks])


async def test_the_dag_groups_children_and_folds_them_with_the_list(
    engine: Engine, tmp_path: Path
) -> None:
    tasks = research(tmp_path / "gate")
    parent = tasks[1]
    await engine.submit(tasks)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        dag = app.query_one(DagView)
        await until(pilot, lambda: "papers" in names(app), "the tree")
        await pilot.press("2")
        await until(pilot, lambda: "research.papers" in dag.render_text(), "children drawn")
        boxes = dag.graph_layout.boxes
        # The children hang below their parent, and the parent's dependent below them.
        assert boxes[tasks[2].id].layer == boxes[parent.id].layer + 1
        assert boxes[tasks[4].id].layer == boxes[tasks[3].id].layer + 1
        assert dag.graph_layout.parents[tasks[2].id] == [parent.id]
        # Space in the DAG folds the selected parent into one box, and the list with it.
        app.query_one(TaskList).select_id(parent.id)
        await until(pilot, lambda: dag.selected == parent.id, "research selected in the DAG")
        await pilot.press("space")
        await until(
            pilot,
            lambda: "research (2 children: 1 done)" in dag.render_text(),
            "one box for the group",
        )
        assert "research.web" not in dag.render_text()
        assert "web" not in names(app)
        assert dag.graph_layout.parents[tasks[4].id] == [parent.id]
        (tmp_path / "gate").touch()
        await until(pilot, lambda: "research (2 children: 2 done)" in dag.render_text(), "2 done")
        await pilot.press("space")
        await until(pilot, lambda: "research.web" in dag.render_text(), "unfolded")
        assert "web" in names(app)
        await engine.wait_settled([t.id for t in tasks])


async def test_foreach_children_and_the_fold_keys_only_with_subtasks(engine: Engine) -> None:
    plain = load_task_text(
        "tasks:\n  - name: solo\n    agent: {type: shell, instructions: 'true'}\n", "a.yaml"
    ).tasks
    fan = load_task_text(
        """
tasks:
  - name: each
    foreach: [a, b, c]
    agent: {type: shell, instructions: "echo {{item}}"}
""",
        "b.yaml",
    ).tasks
    await engine.submit(plain)
    await engine.wait_settled([t.id for t in plain])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "solo" in names(app), "solo")
        assert "Fold" not in screen_text(app)  # no subtasks: no fold key in the footer
        await engine.submit(fan)
        await until(pilot, lambda: "▾ each 3/3" in row_of(app, "each"), "the foreach done")
        shown = ["▾ each 3/3", "each[0]", "each[1]", "each[2]"]
        assert [n.strip() for n in names(app)][1:] == shown
        await until(pilot, lambda: "Fold" in screen_text(app), "the fold key in the footer")
        await engine.wait_settled([t.id for t in fan])


async def test_a_foreach_of_sixty_items_starts_folded_in_the_list_and_the_dag(
    engine: Engine,
) -> None:
    items = ", ".join(str(i) for i in range(60))
    text = "tasks:\n  - name: each\n    foreach: [ITEMS]\n"
    text += '    agent: {type: shell, instructions: "echo {{item}}"}\n'
    fan = load_task_text(text.replace("ITEMS", items), "fan.yaml").tasks
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await engine.submit(fan)
        await until(pilot, lambda: "▸ each" in row_of(app, "each"), "each folded")
        assert names(app) == [f"▸ each {app.query_one(TaskList).task_tree.progress(fan[0].id)}"]
        await until(pilot, lambda: "▸ each 60/60" in row_of(app, "each"), "all 60 done")
        await pilot.press("2")
        dag = app.query_one(DagView)
        await until(pilot, lambda: "each (60 children: 60 done)" in dag.render_text(), "one box")
        await until(pilot, lambda: dag.selected == fan[0].id, "each selected in the DAG")
        await pilot.press("space")
        await until(pilot, lambda: len(names(app)) > 30, "unfolded")
        assert names(app)[1].strip() == "each[0]"


async def test_a_child_made_at_run_time_joins_its_running_parent(
    engine: Engine, tmp_path: Path
) -> None:
    """As the MCP `create_subtask` tool does: a task naming the running task as its parent,
    submitted while it runs."""
    gate = tmp_path / "gate"
    agent = load_task_text(
        "tasks:\n  - name: agent\n    agent:\n      type: shell\n"
        f"      instructions: 'while [ ! -e {gate} ]; do sleep 0.05; done'\n",
        "agent.yaml",
    ).tasks
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await engine.submit(agent)
        await until(pilot, lambda: "▶" in row_of(app, "agent"), "agent running")
        assert "Fold" not in screen_text(app)
        child = Task.model_validate(
            {
                "name": "helper",
                "parent_task_id": agent[0].id,
                "agent": {"type": "shell", "instructions": "echo helped"},
            }
        )
        await engine.submit([child])
        await until(pilot, lambda: names(app)[-1].strip() == "helper", "the child under agent")
        await until(pilot, lambda: "▾ agent 1/1" in row_of(app, "agent"), "the child done")
        await until(pilot, lambda: "Fold" in screen_text(app), "the fold key in the footer")
        gate.touch()
        await engine.wait_settled([agent[0].id, child.id])


def cell(app: TuiApp, name: str, column: str) -> str:
    """The text under ``column``'s header in the row showing ``name``."""
    header = visible_text(app.query_one(TaskList)).splitlines()[0]
    start = header.index(column)
    after = header[start + len(column) :]
    end = start + len(column) + len(after) - len(after.lstrip())
    return row_of(app, name)[start:end].strip() if end > start + len(column) else ""


HELPED = """
classifier: {agent: shell, prompt: "echo '{\\"agent\\": \\"shell\\"}'"}
tasks:
  - name: scan
    agent: {type: shell, instructions: "echo scanned"}
  - name: brief
    depends_on: [scan]
    context: {transfer: full}
    summarizer:
      agent: shell
      prompt: "echo '{\\"summary\\": \\"short\\"}'"
      compaction: {threshold: 5}
    agent: {type: shell, instructions: "true"}
  - name: each
    foreach: [a, b]
    agent: {type: shell, instructions: "sleep 1; echo {{item}}"}
  - name: triage
    agent: {instructions: "true"}
"""


async def test_helper_tasks_hang_under_the_task_they_serve_and_a_parent_shows_its_span(
    engine: Engine,
) -> None:
    tasks = load_task_text(HELPED, "helped.yaml").tasks
    await engine.submit(tasks)
    await engine.wait_settled([t.id for t in tasks])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "classify:triage" in names(app), "the list")
        assert [n.strip() for n in names(app)] == [
            "scan",
            "▾ brief",  # a helper under it, and no count of subtasks
            "compact:scan",
            "▾ each 2/2",
            "each[0]",
            "each[1]",
            "▾ triage",
            "classify:triage",
        ]
        # Each helper keeps its own state and columns.
        assert "✓" in row_of(app, "compact:scan") and cell(app, "compact:scan", "TRY") == "1/1"
        assert "✓" in row_of(app, "classify:triage")
        # The foreach never ran itself: no tries; its time is its children's, first start to
        # last end.
        runs = [r for r in await engine.list_tasks() if r.name.startswith("each[")]
        first = min(r.run_started_at or 0 for r in runs)
        last = max(r.run_ended_at or 0 for r in runs)
        assert last - first >= 1
        assert cell(app, "each 2/2", "TRY") == ""
        assert cell(app, "each 2/2", "TIME") == f"{int(last - first)}s"
        # Folding the served task folds its helper away.
        app.query_one(TaskList).select_id(next(t.id for t in tasks if t.name == "brief"))
        await pilot.press("space")
        await until(pilot, lambda: "compact:scan" not in names(app), "brief folded")
        assert "▸ brief" in row_of(app, "brief")
