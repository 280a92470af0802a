"""Problems found in task files, phrased for the person who has to fix them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Issue:
    file: str
    line: int | None
    field: str  # dotted path, e.g. "tasks[2].agent.instructions"; "" for the whole file
    message: str
    fix: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" {self.field}:" if self.field else ""
        message = self.message.rstrip(".")
        # "did you mean 'x'?" already ends the sentence.
        text = f"{where}:{field} {message}" + ("" if message.endswith(("?", "!")) else ".")
        return f"{text} Fix: {self.fix}" if self.fix else text


class TaskFileError(Exception):
    """Every error from every file of one load, so the user fixes them in one pass."""

    def __init__(self, issues: list[Issue], warnings: list[Issue] | None = None) -> None:
        self.issues = list(issues)
        self.warnings = list(warnings or [])
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)
