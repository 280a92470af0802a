"""The store's errors: each is a problem the user can act on, printed without a traceback."""

from __future__ import annotations


class StoreError(Exception):
    """A problem the user can act on (bad id, duplicate task...). Printed without traceback."""


class DatabaseFileError(StoreError):
    """The database file itself is the problem (missing, read-only, damaged, disk full)."""


class DiskFullError(DatabaseFileError):
    """A write failed because the disk holding the database is full."""
