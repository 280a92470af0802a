"""The tree behind the task list and the DAG's groups: nesting, folding, progress counted as
children change (the same record objects changing in place, as the engine hands them out),
and the DAG's edges around a group, folded or not."""

from __future__ import annotations

from tests.conftest import shell_task
from tui.app.widgets.dag_groups import grouped_nodes
from tui.app.widgets.task_tree import TaskTree, parent_of
from tui.model.states import State
from tui.model.task import Task
from tui.store.records import TaskRecord


def record(task: Task, state: State = State.PENDING, stored: bool = True) -> TaskRecord:
    spec: Task | str = task.model_dump_json() if stored else task
    return TaskRecord(
        task.id, task.name, spec, state, "", True, 0, 0, None, 0.0, 0, 0, "", None, None,
        0.0, 0.0, 0, depends_on=list(task.depends_on),
    )  # fmt: skip


def family() -> dict[str, TaskRecord]:
    """scan; group (a, b after a, and nested inner: x) after scan; end after group."""
    tasks = [
        shell_task("scan", "true", id="scan"),
        shell_task("group", ":", id="group", depends_on=["scan"]),
        shell_task("group.a", "true", id="group.a", parent_task_id="group", depends_on=["scan"]),
        shell_task("group.b", "true", id="group.b", parent_task_id="group", depends_on=["group.a"]),
        shell_task("group.inner", ":", id="group.inner", parent_task_id="group"),
        shell_task("group.inner.x", "true", id="group.inner.x", parent_task_id="group.inner"),
        shell_task("end", "true", id="end", depends_on=["group"]),
    ]
    return {t.id: record(t) for t in tasks}


def tree_of(records: dict[str, TaskRecord]) -> TaskTree:
    tree = TaskTree()
    tree.add(records.values())
    return tree


def test_a_stored_spec_and_a_parsed_one_give_the_same_parent() -> None:
    child = shell_task("c", "true", parent_task_id="p")
    assert parent_of(record(child)) == parent_of(record(child, stored=False)) == "p"
    assert parent_of(record(shell_task("r", "true"))) == ""


def test_rows_nest_and_fold_at_any_depth() -> None:
    records = family()
    tree = tree_of(records)
    ordered = list(records.values())
    shown = [(r.id, d) for r, d in tree.rows(ordered)]
    assert shown == [
        ("scan", 0),
        ("group", 0),
        ("group.a", 1),
        ("group.b", 1),
        ("group.inner", 1),
        ("group.inner.x", 2),
        ("end", 0),
    ]
    tree.collapsed = {"group.inner"}
    assert [i for i, _ in ((r.id, d) for r, d in tree.rows(ordered))] == [
        "scan", "group", "group.a", "group.b", "group.inner", "end",
    ]  # fmt: skip
    tree.collapsed = {"group"}
    assert [r.id for r, _ in tree.rows(ordered)] == ["scan", "group", "end"]
    assert tree.folded_under("group.inner.x") == "group"
    # A filter's match keeps its ancestors, outermost included.
    kept = tree.with_ancestors([records["group.inner.x"]], records)
    assert {r.id for r in kept} == {"group.inner.x", "group.inner", "group"}


def test_progress_follows_children_changed_in_place() -> None:
    records = family()
    tree = tree_of(records)
    assert str(tree.progress("group")) == "0/3"
    a, b = records["group.a"], records["group.b"]
    a.state = State.COMPLETED  # the same object, changed: as the engine's live records are
    tree.add([a])
    b.state = State.FAILED
    tree.add([b])
    assert str(tree.progress("group")) == "1/3 ✗1"
    b.state = State.SKIPPED
    tree.add([b, b])  # seen twice in one batch: counted once
    assert str(tree.progress("group")) == "2/3"


def test_the_dag_hangs_a_group_below_its_parent_and_folds_it_into_one_box() -> None:
    records = family()
    tree = tree_of(records)
    deps = {n.id: set(n.depends_on) for n in grouped_nodes(records, tree)}
    assert deps["group.a"] == {"group"}  # not scan: the parent's edge stands for it
    assert deps["group.b"] == {"group.a"}  # a sibling to wait on: no edge from the parent
    assert deps["group.inner.x"] == {"group.inner"}
    # The parent's dependent waits on the group's last children (nested ones inside theirs).
    assert deps["end"] == {"group.b", "group.inner.x"}

    tree.collapsed = {"group"}
    nodes = {n.id: n for n in grouped_nodes(records, tree)}
    assert set(nodes) == {"scan", "group", "end"}
    assert nodes["group"].name == "group (3 children: 0 done)"
    assert nodes["group"].group
    assert set(nodes["end"].depends_on) == {"group"}
    assert set(nodes["group"].depends_on) == {"scan"}

    tree.collapsed = {"group.inner"}
    nodes = {n.id: n for n in grouped_nodes(records, tree)}
    assert "group.inner.x" not in nodes
    assert set(nodes["end"].depends_on) == {"group.b", "group.inner"}


def test_an_outside_task_waiting_on_a_folded_child_waits_on_its_box() -> None:
    records = family()
    extra = shell_task("audit", "true", id="audit", depends_on=["group.inner.x"])
    records["audit"] = record(extra)
    tree = tree_of(records)
    tree.collapsed = {"group"}
    nodes = {n.id: n for n in grouped_nodes(records, tree)}
    assert set(nodes["audit"].depends_on) == {"group"}


def test_a_parent_of_more_than_fifty_starts_folded_unless_the_person_chose() -> None:
    big = shell_task("big", ":", id="big")
    small = shell_task("small", ":", id="small")
    kids = [shell_task(f"big[{i}]", "true", id=f"big.{i}", parent_task_id="big") for i in range(51)]
    few = [
        shell_task(f"small[{i}]", "true", id=f"small.{i}", parent_task_id="small")
        for i in range(50)
    ]
    tree = TaskTree()
    tree.add([record(t) for t in [big, small, *kids[:50], *few]])
    assert tree.collapsed == set()
    tree.add([record(kids[50])])  # the 51st child, arriving later
    assert tree.collapsed == {"big"}
    # Unfolded by the person: a 52nd child leaves it unfolded.
    tree.touched.add("big")
    tree.collapsed.clear()
    tree.add([record(shell_task("big[51]", "true", id="big.51", parent_task_id="big"))])
    assert tree.collapsed == set()
