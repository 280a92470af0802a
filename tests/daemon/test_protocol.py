"""The wire form of the event stream: what a viewer decodes is what the engine published."""

from __future__ import annotations

from tui.daemon import protocol as wire
from tui.engine.events import OutputBatch
from tui.store.chunks import make_chunks


def roundtrip(batch: OutputBatch) -> list[OutputBatch]:
    msgs = [wire.decode(wire.encode(m)) for m in wire.event_messages(batch)]
    return [wire.event_from_wire(m) for m in msgs]  # type: ignore[misc]


def test_stored_chunks_travel_whole_and_split_into_the_same_lines() -> None:
    chunks = make_chunks("a", 1, 1, 1, 0.0, [f"a{i}" for i in range(5)]) + make_chunks(
        "b", 2, 2, 1, 0.0, ["b1", "b2"]
    )
    batch = OutputBatch.of_chunks(100, chunks)
    [got] = roundtrip(batch)
    assert got.chunks is not None  # not split on the way
    assert [(ln.id, ln.task_id, ln.text) for ln in got.lines] == [
        (ln.id, ln.task_id, ln.text) for ln in OutputBatch.of_chunks(100, chunks).lines
    ]
    assert [(ln.id, ln.text, ln.stream) for ln in got.lines_of("b")] == [
        (105, "b1", 2),
        (106, "b2", 2),
    ]


def test_a_big_batch_becomes_several_messages_with_consecutive_ids() -> None:
    line = "x" * 1000
    chunks = [c for i in range(600) for c in make_chunks("a", 1, 1, 1 + i, 0.0, [line])]
    parts = roundtrip(OutputBatch.of_chunks(1, chunks))
    assert len(parts) > 1
    ids = [ln.id for p in parts for ln in p.lines]
    assert ids == list(range(1, 601))


def test_rows_already_split_travel_as_rows() -> None:
    batch = OutputBatch.of_chunks(1, make_chunks("a", 1, 1, 1, 0.0, ["x", "y", "z"]))
    tail = batch.after(1)  # a resume inside a chunk: rows, not chunks
    assert tail is not None
    [got] = roundtrip(tail)
    assert [(ln.id, ln.text) for ln in got.lines] == [(2, "y"), (3, "z")]
