"""How a run ended, kept beside the database from the moment its agent is done until its end is
committed: a kill -9 there must not make the next engine run it again.

Once a run's agent has exited and its output has been read to the end, the engine appends one
line to ``DB-ends`` (the outcome it decided, what the executor said, the run's lines not yet
stored), then stores those lines and commits the run's end. A plain write, no fsync, no store
round trip: it has to outlive the engine's process, not the machine. The file keeps RESERVE
bytes allocated past its last line, so that an end is recorded on a full disk too: when the
database refuses it, a kill -9 or a stop (``Engine.stop``) leaves it to the next engine. Recovery
(``Engine._recover``) finishes each run still open that this file names exactly as the dead
engine was about to — its lines not stored are stored then, once — instead of closing it as
interrupted and running it again; then the file starts empty. See docs/daemon.md, "Crash
safety", for the window left (from the agent's exit until its output is read to the end).
An agent its engine's keeper keeps for the next engine needs no line here when it ended by
itself: the keeper holds its exit and output until the end is committed
(``run_end._kept_by_keeper``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from tui.engine.adapter import RunResult
from tui.model.states import State
from tui.store.chunks import ChunkRow

RawRow = tuple[str, int, int, float, str]  # a protocol line: task_id, run_id, seq, at, text

log = logging.getLogger(__name__)

# Test hook, off unless set: a directory, where the engine touches RUN_ID once it has recorded
# a run's end here and then never stores the end (a test kills it then); or "kill": the engine
# kills itself (SIGKILL) right after recording the end, before its last lines are stored.
STALL_ENV = "TUI_TEST_STALL_END"


@dataclass(frozen=True)
class Ended:
    """One run's end as recorded: enough to finish it without the agent or its output."""

    run_id: int
    task_id: str
    attempt: int
    outcome: State
    error: str
    stored: str | None  # the task's result as it is stored
    result: RunResult
    kill_reason: str
    seq: int  # the run's last line numbers (text, protocol)
    raw_seq: int
    chunks: list[ChunkRow]  # its lines not stored yet as the end was recorded
    raw: list[RawRow]


def ends_path(db_path: str) -> Path | None:
    """Where a database's ends are kept; None for a database that is no file."""
    if not db_path or db_path == ":memory:" or db_path.startswith("file:"):
        return None
    return Path(f"{db_path}-ends")


# A record larger than this is not written (the run is then interrupted if the engine dies
# before its end is committed): its lines would take room the database may need for the end.
# A run's unstored lines are a flush interval's worth; this is far beyond that.
MAX_RECORD = 256 * 1024

# The log is emptied once no end is outstanding and it has grown past this. Emptying it at
# every commit cost a truncate (and the next append a fresh block) per run; the lines of ends
# already committed are harmless: recovery finishes only runs still open, and a run's id is
# never reused.
KEEP_BYTES = 64 * 1024

# Bytes allocated past the last line (zeros: no record holds a NUL), so that the ends of a
# disk that fills are still recorded: dozens of usual ends, a few with many lines not stored.
RESERVE = 64 * 1024

_RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(RunResult))
# One encoder for every record: json.dumps with separators builds a new one at each call.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def _as_json(ended: Ended) -> dict[str, object]:
    """``dataclasses.asdict`` by hand: it deep-copied every line of the record (~25 µs a run,
    on the loop, for every run)."""
    result = ended.result
    return {
        "run_id": ended.run_id,
        "task_id": ended.task_id,
        "attempt": ended.attempt,
        "outcome": ended.outcome.value,
        "error": ended.error,
        "stored": ended.stored,
        "result": {
            **{name: getattr(result, name) for name in _RESULT_FIELDS},
            "outcome": result.outcome.value,
        },
        "kill_reason": ended.kill_reason,
        "seq": ended.seq,
        "raw_seq": ended.raw_seq,
        "chunks": ended.chunks,
        "raw": ended.raw,
    }


class EndLog:
    """The engine's append-only record of run ends not yet committed; it starts empty again
    once none is outstanding and it has grown past KEEP_BYTES, so it stays small. Its lines
    are followed by zeros up to the space allocated (``_end``): RESERVE or more."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._outstanding = 0
        self._end = os.fstat(self._fd).st_size
        # Where the lines stop: at the first zero (none in a record), else the file's end.
        head = os.pread(self._fd, self._end, 0) if self._end else b""
        zero = head.find(b"\0")
        self._size = len(head) if zero < 0 else zero
        self._allocate(RESERVE)

    def _allocate(self, need: int) -> bool:
        """At least ``need`` bytes allocated past the lines; False if the disk has not room."""
        short = self._size + need - self._end
        if short <= 0:
            return True
        grow = max(short, RESERVE)
        try:
            os.posix_fallocate(self._fd, self._end, grow)
        except OSError as e:  # a full disk: what is allocated still serves
            log.debug("no more room for the end log %s: %s", self.path, e)
            return False
        self._end += grow
        return True

    def write(self, ended: Ended) -> bool:
        """Record ``ended``; True if it is there whole (then call ``done`` once it is
        committed)."""
        line = _ENCODE(_as_json(ended)).encode() + b"\n"
        if len(line) > MAX_RECORD:
            return False
        size = self._size
        if not self._allocate(len(line)):  # the disk is full: nothing of it is written
            log.warning("could not record the end of run %d: the disk is full", ended.run_id)
            return False
        try:
            written = os.pwrite(self._fd, line, size)
        except OSError as e:  # the run is then interrupted if we die now
            log.warning("could not record the end of run %d: %s", ended.run_id, e)
            return False
        if written < len(line):  # cannot be in allocated space: leave no part of it
            with contextlib.suppress(OSError):
                os.pwrite(self._fd, bytes(written), size)
            return False
        self._size += written
        self._outstanding += 1
        self._allocate(RESERVE)  # the next ends' room, while the disk has it
        return True

    def done(self) -> None:
        """A recorded end is committed."""
        self._outstanding -= 1
        if self._outstanding <= 0:
            self._outstanding = 0
            if self._size > KEEP_BYTES:
                self.clear()

    def read(self) -> dict[int, Ended]:
        """Every whole line, by run id (a line cut short by a kill is left out)."""
        try:
            text = self.path.read_bytes().decode(errors="replace")
        except OSError:
            return {}
        out: dict[int, Ended] = {}
        for line in text.replace("\0", "").splitlines():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                data = json.loads(line)
                res = data.pop("result")
                res["outcome"] = State(res["outcome"])
                data["outcome"] = State(data["outcome"])
                data["chunks"] = [tuple(c) for c in data["chunks"]]
                data["raw"] = [tuple(r) for r in data["raw"]]
                ended = Ended(result=RunResult(**res), **data)
                out[ended.run_id] = ended
        return out

    def clear(self) -> None:
        """Every run named here is committed now. Zeroed, not truncated: its space stays
        allocated for the next ends (past a large one's, given back)."""
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, bytes(self._size), 0)
            self._size = 0
            if self._end > KEEP_BYTES + RESERVE:
                os.ftruncate(self._fd, RESERVE)
                self._end = RESERVE

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
