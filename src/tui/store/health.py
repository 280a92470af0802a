"""What is wrong with a database file, said so that the user can act on it.

SQLite reports a damaged, read-only, full or vanished file as a bare ``sqlite3`` error that
names neither the file nor a way out; these turn it into a :class:`DatabaseFileError` that
does both. ``FileIdentity`` tells whether the path still names the file we have open (a
database deleted or replaced under a running daemon would otherwise be written into an
unlinked inode, and everything lost when the daemon stops).
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from tui.store.errors import DatabaseFileError, DiskFullError

# SQLite's primary result codes (the low byte of the extended code).
_READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 8, 10, 11, 13, 14, 26


def is_file_problem(e: BaseException) -> bool:
    return isinstance(e, sqlite3.Error) and _code(e) in {
        _READONLY,
        _IOERR,
        _CORRUPT,
        _FULL,
        _CANTOPEN,
        _NOTADB,
    }


def is_damage(e: BaseException) -> bool:
    return _code(e) in (_CORRUPT, _NOTADB)


def explain(path: Path, e: sqlite3.Error, integrity: str = "") -> DatabaseFileError:
    """The error to show for ``e`` on the database at ``path``; ``integrity`` is what
    ``PRAGMA integrity_check`` said, when it was run."""
    code = _code(e)
    if code == _FULL:
        return DiskFullError(
            f"database disk is full: {path} ({e}); what was stored before is kept. "
            "Free space on that disk, then `tui retry` the task."
        )
    if code == _READONLY:
        return DatabaseFileError(f"cannot write database {path}: {_why_readonly(path)}")
    if code in (_CORRUPT, _NOTADB):
        found = f" `PRAGMA integrity_check` says: {integrity}." if integrity else ""
        said = " ".join(str(e).split())  # may quote a whole damaged row: one short line
        said = said if len(said) <= 160 else said[:160] + "…"
        return DatabaseFileError(
            f"database {path} is damaged ({said}).{found} Restore it from a backup, or save what"
            f" can still be read: `sqlite3 {path} .recover > saved.sql`, then"
            " `sqlite3 NEW.db < saved.sql` and use `--db NEW.db`."
        )
    if code == _CANTOPEN and not path.exists():
        return missing(path)
    if code == _CANTOPEN and not os.access(path, os.R_OK):
        return DatabaseFileError(f"cannot read database {path}: {_owner(path)}")
    if code == _CANTOPEN and not os.access(path.parent, os.W_OK):  # a read-only mount too
        return DatabaseFileError(
            f"cannot open database {path}: its directory {path.parent} is not writable (a"
            " read-only mount, or no write permission), and SQLite makes its -wal and -shm"
            f" files there even to read. Use a copy (`cp {path} COPY.db`, then `--db"
            " COPY.db`), or make the directory writable."
        )
    return DatabaseFileError(f"cannot use database {path}: {e}")


def missing(path: Path) -> DatabaseFileError:
    return DatabaseFileError(
        f"no database at {path} (check --db / $TUI_DB; `tui run FILE` creates one)"
    )


def integrity_check(db: sqlite3.Connection, limit: int = 5) -> str:
    """Up to ``limit`` problems `PRAGMA integrity_check` finds, one line; "" if it cannot run."""
    try:
        rows = db.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()
    except sqlite3.Error as e:  # damaged in a way that stops the check itself
        return f"(could not run: {e})"
    found = "; ".join(" ".join(str(r[0]).split()) for r in rows)
    return found if len(found) <= 400 else found[:400] + "…"


def _why_readonly(path: Path) -> str:
    try:
        st = path.stat()
    except OSError as e:
        return f"{e.strerror}"
    mode = oct(st.st_mode & 0o777)
    if st.st_uid != os.getuid():
        return _owner(path)
    if not os.access(path, os.W_OK):
        return f"the file is read-only (mode {mode}). Make it writable: `chmod u+w {path}`."
    if not os.access(path.parent, os.W_OK):
        return (
            f"its directory {path.parent} is not writable (SQLite keeps its -wal and -shm files"
            " there). Make it writable or move the database."
        )
    return "SQLite opened it read-only (check the file, its -wal/-shm files and the mount)."


def _owner(path: Path) -> str:
    try:
        st = path.stat()
    except OSError as e:
        return str(e.strerror)
    return (
        f"it belongs to another user (uid {st.st_uid}, mode {oct(st.st_mode & 0o777)}). Use"
        f" your own database (--db), or ask its owner for a copy (`cp {path} mine.db`, then"
        " `--db mine.db`)."
    )


def _code(e: BaseException) -> int:
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    # Errors raised before SQLite gave a code (or by an older Python) carry only the text.
    text = str(e).lower()
    for needle, c in (
        ("readonly database", _READONLY),
        ("disk image is malformed", _CORRUPT),
        ("not a database", _NOTADB),
        ("database or disk is full", _FULL),
        ("unable to open database", _CANTOPEN),
        ("disk i/o error", _IOERR),
        ("could not decode to utf-8", _CORRUPT),  # bytes flipped inside a stored text value
    ):
        if needle in text:
            return c
    return -1


@dataclass(frozen=True)
class FileIdentity:
    """(device, inode) of the database file when it was opened."""

    dev: int
    ino: int

    @staticmethod
    def of(path: Path) -> FileIdentity:
        st = os.stat(path)
        return FileIdentity(st.st_dev, st.st_ino)

    def check(self, path: Path) -> None:
        """Raise unless ``path`` still names the file that was opened."""
        try:
            now = FileIdentity.of(path)
        except FileNotFoundError:
            raise DatabaseFileError(
                f"database {path} was deleted while tui (pid {os.getpid()}) had it open: it"
                " stops using it, and saves what it held back to that path as it closes"
            ) from None
        if now != self:
            raise DatabaseFileError(
                f"database {path} was replaced by another file while tui (pid {os.getpid()})"
                f" had it open: it stops using it, and saves what it held beside it"
                f" ({path.name}.saved-TIME) as it closes"
            )


def check_header(path: Path) -> None:
    """A file shorter than its header says (a truncated tail) is refused at open: SQLite itself
    notices only when a query reaches a missing page, maybe deep inside a run."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
        size = path.stat().st_size
        for journal in ("-wal", "-journal"):
            side = path.with_name(path.name + journal)
            if side.exists() and side.stat().st_size > 0:
                return  # pages may be in the WAL or a hot journal: the header is not all
    except OSError:
        return  # missing or unreadable: opening it says so
    if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
        return
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] != head[92:96] or pages == 0:
        return  # the page count is valid only when both change counters agree
    if size < pages * page_size:
        raise DatabaseFileError(
            f"database {path} is damaged: it is cut short ({size} bytes; its header says"
            f" {pages} pages of {page_size} bytes). Restore it from a backup, or save what can"
            f" still be read: `sqlite3 {path} .recover > saved.sql`, then"
            " `sqlite3 NEW.db < saved.sql` and use `--db NEW.db`."
        )


def save_copy(conn: sqlite3.Connection, path: Path, *, beside: bool = False) -> Path:
    """Write what ``conn`` holds to ``path`` (or beside it, ``NAME.saved-TIME``, if another
    file now has the name or ``beside`` is asked). For a database deleted while open: the
    open connection still reads the deleted file."""
    target = path
    if beside or path.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = path.with_name(f"{path.name}.saved-{stamp}")
        if beside:  # a viewer's copy: never the name a writer's copy takes the same second
            target = path.with_name(f"{path.name}.saved-{stamp}-{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(target.name + ".saving")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)  # born owner-only
    os.close(fd)
    dst = sqlite3.connect(tmp)
    try:
        conn.backup(dst)
    finally:
        dst.close()
    if target == path:
        drop_orphans(path)
    os.replace(tmp, target)
    return target


def drop_orphans(path: Path) -> None:
    """Remove the -wal and -shm of a database file that is gone. SQLite keeps them when the
    main file is deleted under an open connection (which still uses them through its open
    files); a new database made at the same path would read them as its own."""
    for leftover in ("-wal", "-shm"):
        # Looked at again just before: a database being created has its main file before
        # SQLite makes its -wal, so a -wal without a main file is nobody's.
        if not path.exists():
            path.with_name(path.name + leftover).unlink(missing_ok=True)
