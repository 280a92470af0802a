"""How much of an input file tui reads: every limit a hostile file could otherwise push to
gigabytes of memory, a hang or a crash. Each is far above what a person writes by hand."""

from __future__ import annotations

MAX_FILE_BYTES = 10_000_000  # a task file, config.toml or XML template
MAX_DEPTH = 64  # nested mappings/lists (a task file needs about 6)
MAX_NODES = 500_000  # values in one YAML file, each alias counted as all it stands for
MAX_ALIASES = 20_000  # `*name` uses in one YAML file (e.g. `<<: *defaults` per task)
MAX_NUMBER_CHARS = 100  # characters of one number (a 400-digit `timeout` is a mistake)
MAX_TASKS_PER_FILE = 10_000
MAX_ID_CHARS = 128  # a task id: letters, digits, `.`, `_`, `-` (see model.task)


def read_bounded(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or ValueError when it is larger than ``limit`` (read at most one
    byte past it, so /dev/zero behind a symlink cannot make us read forever)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(too_big(limit))
    return data


def too_big(limit: int = MAX_FILE_BYTES) -> str:
    return f"file is larger than {limit:,} bytes, the most tui reads"
