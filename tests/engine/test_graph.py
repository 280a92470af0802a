"""The dependency graph on its own: open counts, what may run, what a failure cancels."""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.engine.graph import Graph, failed_for_good
from tui.model.states import State


@dataclass
class N:
    id: str
    depends_on: list[str] = field(default_factory=list)
    state: State = State.PENDING
    retry_at: float | None = None


def graph_of(*nodes: N) -> tuple[Graph, dict[str, N]]:
    by_id = {n.id: n for n in nodes}
    g = Graph()
    g.add(list(nodes), by_id.get)
    return g, by_id


def test_a_task_waits_until_every_dependency_completed() -> None:
    g, by_id = graph_of(N("a"), N("b"), N("c", ["a", "b"]))
    assert g.open_deps("c") == 2 and g.open_deps("a") == 0
    by_id["a"].state = State.COMPLETED
    assert g.completed("a") == []  # c still waits on b
    assert g.open_deps("c") == 1
    by_id["b"].state = State.COMPLETED
    assert g.completed("b") == ["c"]
    assert g.unfinished(by_id["c"], by_id.get) == []


def test_a_dependency_already_completed_when_added_is_not_waited_on() -> None:
    g, by_id = graph_of(N("a", state=State.COMPLETED), N("b", ["a"]), N("c", ["a", "gone"]))
    assert g.open_deps("b") == 0
    assert g.open_deps("c") == 1  # an unknown id never completes
    assert g.unfinished(by_id["c"], by_id.get) == ["gone"]


def test_blocking_is_a_dependency_failed_with_no_retry_coming() -> None:
    g, by_id = graph_of(N("a", state=State.FAILED, retry_at=5.0), N("b", ["a"]))
    assert g.blocking(by_id["b"], by_id.get) is None  # a retries: b keeps waiting
    by_id["a"].retry_at = None
    assert g.blocking(by_id["b"], by_id.get) is by_id["a"]
    assert failed_for_good(by_id["a"]) and not failed_for_good(None)


def test_cascade_names_each_task_once_with_its_cause_before_it() -> None:
    #   a -> b -> d ;  a -> c -> d ;  c -> e (RUNNING: not cancelled, not walked through)
    #   e -> f
    g, by_id = graph_of(
        N("a", state=State.FAILED),
        N("b", ["a"]),
        N("c", ["a"]),
        N("d", ["b", "c"]),
        N("e", ["c"], state=State.RUNNING),
        N("f", ["e"]),
    )
    out = g.cascade("a", lambda i: by_id[i].state == State.PENDING)
    assert out == [("b", "a"), ("d", "b"), ("c", "a")]


def test_cascade_of_a_100000_chain_is_one_iterative_pass() -> None:
    n = 100_000
    nodes = [N("t0", state=State.FAILED)] + [N(f"t{i}", [f"t{i - 1}"]) for i in range(1, n)]
    g, by_id = graph_of(*nodes)
    out = g.cascade("t0", lambda i: by_id[i].state == State.PENDING)
    assert len(out) == n - 1
    assert out[0] == ("t1", "t0") and out[-1] == (f"t{n - 1}", f"t{n - 2}")
