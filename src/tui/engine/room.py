"""Room kept on the database's disk for the ends of runs.

When the disk fills, the run whose lines filled it is killed, and its end must still be
stored (its task FAILED, the reason naming the file). SQLite reuses the room a refused
transaction left at the end of its WAL, but whatever commits first takes it — another run's
end, say — and an end that then finds none waits for room for ever (tui.engine.run_end). So
while an engine owns a database file it keeps ``ROOM`` bytes allocated in ``DB-room`` and
gives them back the first time a run's end meets a full disk; the file goes when the engine
stops. After that the engine keeps none until it is started again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

# About a dozen runs' ends (a few pages each in the WAL); a trifle on any real disk.
ROOM = 256 * 1024


def room_path(db_path: str) -> Path | None:
    """Where a database's room is kept; None for a database that is no file."""
    if not db_path or db_path == ":memory:" or db_path.startswith("file:"):
        return None
    return Path(f"{db_path}-room")


class Room:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.kept = False
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            log.warning("no room kept for run ends in %s: %s", path, e)
            return
        try:
            os.posix_fallocate(fd, 0, ROOM)
            self.kept = True
        except OSError as e:  # the disk is full already: keep nothing of what it got
            log.warning("no room kept for run ends in %s: %s", path, e)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        finally:
            os.close(fd)

    def give_back(self) -> bool:
        """Free the room for the database; True if there was any to give."""
        if not self.kept:
            return False
        self.close()
        return True

    def close(self) -> None:
        self.kept = False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
