"""How much of an input file tui reads: every limit a hostile file could otherwise push to
gigabytes of memory, a hang or a crash. Each is far above what a person writes by hand."""

from __future__ import annotations

import os
import stat

MAX_FILE_BYTES = 10_000_000  # a task file, config.toml or XML template
MAX_DEPTH = 64  # nested mappings/lists (a task file needs about 6)
MAX_NODES = 500_000  # values in one YAML file, each alias counted as all it stands for
MAX_ALIASES = 20_000  # `*name` uses in one YAML file (e.g. `<<: *defaults` per task)
MAX_NUMBER_CHARS = 100  # characters of one number (a 400-digit `timeout` is a mistake)
MAX_TASKS_PER_FILE = 10_000
MAX_ID_CHARS = 128  # a task id: letters, digits, `.`, `_`, `-` (see model.task)


class UnreadableInput(ValueError):
    """A file tui will not read: too large, or not a regular file (a FIFO would block)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def read_bounded(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes; UnreadableInput when it is not a regular file or is larger than
    ``limit`` (at most one byte past it is read, whatever stat says)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableInput("not a regular file", "give the path of a file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnreadableInput(
            f"file is larger than {limit:,} bytes, the most tui reads", "split it into parts"
        )
    return data
