"""The tree behind the task list and the DAG's groups: nesting, folding, progress counted as
children change (the same record objects changing in place, as the engine hands them out),
and the DAG's edges around a group, folded or not."""

from __future__ import annotations

from tests.conftest import shell_task
from tui.app.widgets.dag_groups import grouped_nodes
from tui.app.widgets.task_tree import TaskTree, parent_of
from tui.model.loader import load_task_text
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


HELPED = """
classifier: {agent: shell, prompt: "echo '{\\"agent\\": \\"shell\\"}'"}
tasks:
  - name: scan
    agent: {type: shell, instructions: "echo scanned"}
  - name: brief
    depends_on: [scan]
    context: {transfer: full}
    summarizer: {agent: shell, prompt: "echo '{}'", compaction: {threshold: 40}}
    agent: {type: shell, instructions: "true"}
  - name: digest
    depends_on: [scan]
    context: {transfer: summary}
    summarizer: {strategy: moderate, agent: shell, prompt: "echo '{}'"}
    agent: {type: shell, instructions: "true"}
  - name: also
    depends_on: [scan]
    context: {transfer: summary}
    summarizer: {strategy: moderate, agent: shell, prompt: "echo '{}'"}
    agent: {type: shell, instructions: "true"}
  - name: triage
    agent: {instructions: "true"}
"""


def helped() -> dict[str, TaskRecord]:
    """The tasks of HELPED as loaded: with classify:triage, compact:scan, summarize:scan."""
    tasks = load_task_text(HELPED, "helped.yaml").tasks
    return {t.name: record(t) for t in tasks}


def shown(tree: TaskTree, records: dict[str, TaskRecord]) -> list[tuple[str, int]]:
    return [(r.name, d) for r, d in tree.rows(list(records.values()))]


def test_a_helper_task_is_shown_under_the_task_it_serves_in_either_order() -> None:
    records = helped()
    assert list(records) == [
        "scan", "compact:scan", "brief", "summarize:scan", "digest", "also",
        "classify:triage", "triage",
    ]  # fmt: skip
    expected = [
        ("scan", 0),
        ("brief", 0),
        ("compact:scan", 1),  # under the dependent it shortens scan's result for
        ("digest", 0),
        ("summarize:scan", 1),  # under the first of the two dependents it serves
        ("also", 0),
        ("triage", 0),
        ("classify:triage", 1),  # under the task whose agent it picks
    ]
    tree = tree_of(records)
    assert shown(tree, records) == expected
    # Learnt one at a time, the tasks served first: the same rows.
    later = TaskTree()
    for name in ["scan", "brief", "digest", "also", "triage", *records]:
        later.add([records[name]])
    assert shown(later, records) == expected
    # Folding the task folds its helper away; the list's parent of a helper is its task.
    tree.collapsed = {records["brief"].id}
    assert ("compact:scan", 1) not in shown(tree, records)
    assert tree.shown_parent(records["classify:triage"].id) == records["triage"].id
    assert tree.any_folds and tree.foldable(records["triage"].id)


def test_helpers_are_no_subtasks_for_the_progress_or_the_dag() -> None:
    records = helped()
    tree = tree_of(records)
    by_id = {r.id: r for r in records.values()}
    # No count of children next to the task's name, no group box in the DAG.
    assert not tree.has_kids(records["brief"].id) and not tree.kids
    nodes = {n.id: n for n in grouped_nodes(by_id, tree)}
    compact, brief = records["compact:scan"], records["brief"]
    assert set(nodes[compact.id].depends_on) == {records["scan"].id}
    assert set(nodes[brief.id].depends_on) == {records["scan"].id, compact.id}
    assert not nodes[brief.id].group
    # Folded in the list, the DAG still draws them.
    tree.collapsed = {brief.id}
    assert compact.id in {n.id for n in grouped_nodes(by_id, tree)}


def test_a_parents_span_covers_its_childrens_runs() -> None:
    records = family()
    tree = tree_of(records)
    group = records["group"]
    assert tree.span(group) == (None, None)  # nothing under it ran yet
    a, x = records["group.a"], records["group.inner.x"]
    a.run_started_at, a.run_ended_at = 100.0, 105.0
    x.run_started_at = 103.0  # a grandchild, still running
    tree.add([a, x])
    assert tree.span(group) == (100.0, 105.0)
    assert tree.span(records["group.inner"]) == (103.0, None)
    x.run_ended_at = 130.0
    tree.add([x])
    assert tree.span(group) == (100.0, 130.0)
    # A retried child's later start leaves the first start where it was.
    a.run_started_at, a.run_ended_at = 140.0, None
    tree.add([a])
    assert tree.span(group) == (100.0, 130.0)
