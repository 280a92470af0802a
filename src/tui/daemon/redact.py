"""A log formatter that never writes a key or token to the daemon's log file."""

from __future__ import annotations

import logging

from tui.model.secrets import redact


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
