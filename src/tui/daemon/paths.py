"""Where a database's daemon listens and logs. One daemon per database file, so `--db` keeps
working as it does without a daemon; the default database gets the per-user daemon."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tui.engine.scheduler import EngineError
from tui.store.paths import state_dir


class RuntimeDirError(EngineError):
    """The socket directory is not safely ours; nothing is created or changed through it."""


@dataclass(frozen=True)
class DaemonPaths:
    db: Path
    socket: Path
    log: Path


def runtime_dir() -> Path:
    """Owner-only directory for sockets: $XDG_RUNTIME_DIR/tui, else $TMPDIR/tui-UID.

    Anyone can create $TMPDIR/tui-UID first (a symlink to a directory of ours, or a directory
    of theirs), so, as tmux and ssh-agent do, it is made with mkdir 0700 and then checked with
    lstat: never followed, never chmodded, refused unless it is our own private directory.
    """
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.access(base, os.W_OK):
        d = Path(base) / "tui"
        d.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    else:
        d = Path(tempfile.gettempdir()) / f"tui-{os.getuid()}"
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise RuntimeDirError(f"cannot create tui's socket directory {d}: {e.strerror}") from e
    _check_private(d)
    return d


def _check_private(d: Path) -> None:
    st = os.lstat(d)
    fix = "remove it (or set XDG_RUNTIME_DIR to a directory of your own) and try again"
    if stat.S_ISLNK(st.st_mode):
        raise RuntimeDirError(f"{d} is a symlink, not tui's socket directory; {fix}")
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeDirError(f"{d} is not a directory; {fix}")
    if st.st_uid != os.getuid():
        raise RuntimeDirError(
            f"{d} is owned by uid {st.st_uid}, not by you (uid {os.getuid()}); {fix}"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise RuntimeDirError(
            f"{d} has unsafe permissions {stat.S_IMODE(st.st_mode):03o} (others could reach "
            f"tui's socket); run `chmod 700 {d}`"
        )


def daemon_paths(db: Path) -> DaemonPaths:
    db = db.expanduser().resolve()
    key = hashlib.sha256(str(db).encode()).hexdigest()[:12]
    return DaemonPaths(
        db, runtime_dir() / f"daemon-{key}.sock", state_dir() / "log" / f"daemon-{key}.log"
    )
