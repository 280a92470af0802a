"""The end log beside the database (tui.engine.end_log): what a kill -9 leaves in it is read
back whole, and a line cut short by the kill is left out rather than misread."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_output_disk_full import small_disk  # noqa: F401  (a fixture)
from tests.engine.test_stop_disk_full import fill
from tui.engine.adapter import RunResult
from tui.engine.end_log import KEEP_BYTES, MAX_RECORD, RESERVE, Ended, EndLog, ends_path
from tui.model.states import State


def ended(run_id: int, code: int) -> Ended:
    outcome = State.COMPLETED if code == 0 else State.FAILED
    return Ended(
        run_id=run_id,
        task_id=f"t{run_id}",
        attempt=1,
        outcome=outcome,
        error="" if code == 0 else f"exit code {code}",
        stored=None,
        result=RunResult(outcome, exit_code=code, result="last line\nwith \u00e9"),
        kill_reason="",
        seq=3,
        raw_seq=0,
        chunks=[(f"t{run_id}", run_id, 1, 2, 1.5, "b\nc", 2)],
        raw=[],
    )


def test_ends_are_read_back_and_a_cut_line_is_left_out(tmp_path: Path) -> None:
    path = ends_path(str(tmp_path / "tui.db"))
    assert path == tmp_path / "tui.db-ends"
    log = EndLog(path)
    assert log.write(ended(1, 0)) and log.write(ended(2, 3))
    with open(path, "ab") as f:
        f.write(b'{"run_id":3,"task_id":"t3","attem')  # the kill came mid-write
    got = EndLog(path).read()
    assert got == {1: ended(1, 0), 2: ended(2, 3)}
    log.clear()
    assert EndLog(path).read() == {}
    log.write(ended(4, 1))  # appends after the clear start at the beginning again
    assert list(EndLog(path).read()) == [4]
    log.close()


def test_a_database_that_is_no_file_keeps_no_end_log() -> None:
    assert ends_path(":memory:") is None
    assert ends_path("") is None


def test_the_log_starts_empty_once_no_end_is_outstanding_and_it_has_grown(
    tmp_path: Path,
) -> None:
    """Ends already committed may stay a while (recovery finishes only runs still open), but
    the file never grows much past KEEP_BYTES."""
    path = tmp_path / "tui.db-ends"
    log = EndLog(path)
    assert log.write(ended(1, 0)) and log.write(ended(2, 0))
    log.done()  # run 1 committed; run 2 not yet
    assert list(EndLog(path).read()) == [1, 2]
    log.done()
    assert list(EndLog(path).read()) == [1, 2]  # small: not worth a truncate per run
    sizes = []
    for run_id in range(3, 3 + KEEP_BYTES // 100):  # records are longer than 100 bytes
        assert log.write(ended(run_id, 0))
        log.done()
        sizes.append(len(path.read_bytes().rstrip(b"\0")))  # its lines; zeros follow them
        assert path.stat().st_size <= KEEP_BYTES + 2 * RESERVE + 1024
    assert 0 in sizes  # emptied on the way
    assert max(sizes) <= KEEP_BYTES + 1024  # once past KEEP_BYTES, by one record at most
    huge = ended(3, 0)
    huge.chunks.append(("t3", 3, 1, 3, 1.5, "x" * MAX_RECORD, 1))
    before = path.stat().st_size
    assert not log.write(huge)  # not recorded: it would take the database's room
    assert path.stat().st_size == before
    log.close()


def test_a_record_holds_every_field_of_the_end(tmp_path: Path) -> None:
    """Written by hand (not dataclasses.asdict): a field added to Ended or RunResult and
    left out of the record would come back missing after a crash."""
    path = tmp_path / "tui.db-ends"
    log = EndLog(path)
    full = Ended(
        run_id=7,
        task_id="t7",
        attempt=2,
        outcome=State.FAILED,
        error="exit code 3",
        stored='{"a": 1}',
        result=RunResult(
            State.FAILED,
            exit_code=3,
            error="boom",
            cost_usd=0.25,
            tokens_in=10,
            tokens_out=20,
            session_id="s-1",
            result="r",
        ),
        kill_reason="timeout",
        seq=5,
        raw_seq=4,
        chunks=[("t7", 7, 1, 5, 1.5, "a\nb", 2)],
        raw=[("t7", 7, 4, 1.5, "{}")],
    )
    assert log.write(full)
    assert EndLog(path).read() == {7: full}
    log.close()


def test_ends_are_recorded_on_a_full_disk(small_disk: Path) -> None:  # noqa: F811
    """The log keeps room of its own: the ends of a disk that has filled are still kept for
    the next engine (a kill -9 or a stop then leaves no finished run to be run again)."""
    path = small_disk / "tui.db-ends"
    log = EndLog(path)
    fill(small_disk)
    count = RESERVE // len(b"x" * 300)  # records are ~300 bytes
    for run_id in range(1, count // 2):
        assert log.write(ended(run_id, 0)), run_id
    log.close()
    assert list(EndLog(path).read()) == list(range(1, count // 2))
    (small_disk / "filler").unlink()
