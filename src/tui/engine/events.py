"""What the engine's event stream carries. Journal events and output lines each keep their own
commit-ordered id; a Cursor holds both so a viewer can resume with no gap and no duplicate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tui.store.records import EventRecord, OutputLine


class Cursor(NamedTuple):
    event_id: int = 0
    output_id: int = 0


@dataclass(frozen=True)
class OutputBatch:
    lines: list[OutputLine]

    @property
    def last_id(self) -> int:
        return self.lines[-1].id


# Journal kinds: submitted, state, run_ended, question, answered, ...
Event = EventRecord | OutputBatch
