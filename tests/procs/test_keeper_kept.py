"""What a keeper keeps of a stream until the engine acknowledges it as stored
(tui.procs.keeper_afterlife.Kept): past MEMORY_CAP bytes the oldest go to a spill file in the
runtime directory, unlinked (it goes with the keeper); what is asked for again comes back whole
from file and memory alike. A real file in a real directory."""

from __future__ import annotations

import os
from pathlib import Path

from tui.procs.keeper_afterlife import MEMORY_CAP, Kept

_REF = os.urandom(2 * MEMORY_CAP + (8 << 20))  # a stream's bytes: no two places alike


def _stream(n: int, at: int = 0) -> bytes:
    """n bytes of the stream from offset ``at``."""
    return _REF[at : at + n]


def _open_files(directory: Path) -> int:
    """How many of this process's open files are in ``directory`` (deleted or not)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(str(directory))
    return count


def test_past_the_cap_the_oldest_bytes_go_to_an_unlinked_file_and_come_back_whole(
    tmp_path: Path,
) -> None:
    kept = Kept(str(tmp_path))
    chunk = 1 << 20
    total = MEMORY_CAP + 3 * chunk
    for at in range(0, total, chunk):
        kept.add(_stream(chunk, at))
    assert kept.fd >= 0, "past the cap: spilled"
    assert len(kept.mem) < MEMORY_CAP
    assert list(tmp_path.iterdir()) == [], "the spill file is unlinked"
    assert _open_files(tmp_path) == 1
    assert kept.since(0) == _stream(total)
    # From within the file, and from within memory.
    assert kept.since(12345) == _stream(total - 12345, 12345)
    assert kept.since(total - 10) == _stream(10, total - 10)

    kept.ack(chunk + 5)  # still inside the file: it stays, what is asked for starts there
    assert kept.fd >= 0
    assert kept.since(0) == _stream(total - chunk - 5, chunk + 5)
    kept.add(_stream(chunk, total))
    assert kept.since(chunk + 5) == _stream(total - 5, chunk + 5)

    kept.ack(total + chunk - 1)  # past the file: it is closed
    assert kept.fd < 0 and _open_files(tmp_path) == 0
    assert kept.since(0) == _stream(1, total + chunk - 1)

    # A second spill file, starting where the stream is now.
    at = total + chunk
    for offset in range(at, at + MEMORY_CAP + chunk, chunk):
        kept.add(_stream(chunk, offset))
    assert kept.fd >= 0 and _open_files(tmp_path) == 1
    end = at + MEMORY_CAP + chunk
    assert kept.end == end <= len(_REF)
    assert kept.since(at + 7) == _stream(end - at - 7, at + 7)
    assert kept.since(0) == _stream(end - total - chunk + 1, total + chunk - 1)
    kept.close()
    assert _open_files(tmp_path) == 0


def test_without_a_spill_directory_everything_stays_in_memory() -> None:
    kept = Kept(None)
    data = _stream(MEMORY_CAP + 100)
    kept.add(data)
    assert kept.fd < 0
    assert kept.since(50) == data[50:]
