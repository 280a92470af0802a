"""store — the durable state: tasks, runs, the event journal and output lines in SQLite."""

from tui.store.db import Store, StoreError
from tui.store.paths import default_db_path
from tui.store.records import STDERR, STDOUT, EventRecord, OutputLine, RunRecord, TaskRecord

__all__ = [
    "STDERR",
    "STDOUT",
    "EventRecord",
    "OutputLine",
    "RunRecord",
    "Store",
    "StoreError",
    "TaskRecord",
    "default_db_path",
]
