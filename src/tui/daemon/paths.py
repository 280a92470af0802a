"""Where a database's daemon listens and logs. One daemon per database file, so `--db` keeps
working as it does without a daemon; the default database gets the per-user daemon."""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tui.store.paths import state_dir


@dataclass(frozen=True)
class DaemonPaths:
    db: Path
    socket: Path
    log: Path


def runtime_dir() -> Path:
    """Owner-only directory for sockets: $XDG_RUNTIME_DIR/tui, else /tmp/tui-UID."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.access(base, os.W_OK):
        d = Path(base) / "tui"
    else:
        d = Path(tempfile.gettempdir()) / f"tui-{os.getuid()}"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    if d.stat().st_uid != os.getuid():
        raise PermissionError(
            f"{d} belongs to another user; set XDG_RUNTIME_DIR to a directory of your own"
        )
    os.chmod(d, 0o700)
    return d


def daemon_paths(db: Path) -> DaemonPaths:
    db = db.expanduser().resolve()
    key = hashlib.sha256(str(db).encode()).hexdigest()[:12]
    return DaemonPaths(
        db, runtime_dir() / f"daemon-{key}.sock", state_dir() / "log" / f"daemon-{key}.log"
    )
