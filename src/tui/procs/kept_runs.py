"""What a keeper outliving its engine leaves for the next engine: where it waits (its socket in
the user's 0700 runtime directory), the results file it writes when no engine came, and the
runs read back from that file as children that have exited (tui.engine.adoption). The live
link to a keeper is tui.procs.keeper_client."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import select
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tui.procs.process import Child, ProcIdentity

_SUN_PATH = 108  # bytes of a Unix socket's path, its NUL included (Linux)


def runtime_dir() -> Path | None:
    """The user's 0700 socket directory (as tui.daemon.paths makes it), or None when it is
    not safely ours: then no keeper outlives its engine."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.access(base, os.W_OK):
        d = Path(base) / "tui"
    else:
        d = Path(tempfile.gettempdir()) / f"tui-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(d)
    except OSError:
        return None
    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    return d if private and not stat.S_IMODE(st.st_mode) & 0o077 else None


def keeper_socket(db_path: str, engine_id: str) -> Path | None:
    """Where the keeper of engine ``engine_id`` of this database waits once its engine died."""
    d = runtime_dir()
    if d is None:
        return None
    key = hashlib.sha256(f"{os.path.realpath(db_path)}\0{engine_id}".encode()).hexdigest()
    path = d / f"keeper-{key[:20]}.sock"
    return path if len(os.fsencode(path)) < _SUN_PATH else None


def keeper_engine(argv: list[bytes]) -> bytes | None:
    """The engine id a keeper's command line names (``python -I -S .../procs/keeper.py FD
    ENGINE_ID``, see Keeper.start; b"" if it names none), or None: not a keeper's."""
    for i, arg in enumerate(argv):
        if arg.endswith(b"/procs/keeper.py"):
            return argv[i + 2] if i + 2 < len(argv) else b""
    return None


def _cmdline(pid: str) -> list[bytes]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")  # a zombie's is empty


def keepers_of(engine_id: str) -> list[int]:
    """Pidfds of the live keepers (tui.procs.keeper) of engine ``engine_id`` run as this
    user (one, or none). The command line is read again once the pidfd is open: the pidfd
    is then that keeper's for good (its pid may be reused)."""
    uid = os.getuid()
    want = engine_id.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fd = -1
        try:
            if keeper_engine(_cmdline(name)) != want or os.stat(f"/proc/{name}").st_uid != uid:
                continue
            fd = os.pidfd_open(int(name))
            if keeper_engine(_cmdline(name)) == want:
                found.append(fd)
                continue
        except OSError:  # gone meanwhile
            pass
        if fd >= 0:
            os.close(fd)
    return found


def running(pidfd: int) -> bool:
    """Whether the process of ``pidfd`` has not exited yet."""
    return not select.select([pidfd], [], [], 0)[0]


def end_keepers(pidfds: list[int]) -> None:
    """SIGKILL these keepers (one that will not answer must not start or run anything more)
    and wait until they are gone."""
    for fd in pidfds:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        select.select([fd], [], [], 5.0)  # readable once it has exited


def results_path(db_path: str, engine_id: str) -> Path:
    """Where that keeper leaves what it holds when no engine came (beside the database)."""
    return Path(f"{db_path}-kept-{engine_id}")


@dataclass
class KeptRun:
    """An agent a dead engine's keeper kept: a live one (``code`` None) or one that ended."""

    key: int
    run_id: int
    pid: int
    start_time: int
    code: int | None


@dataclass
class LeftRun:
    """An agent a keeper with no engine left in its results file: its exit code (None: still
    running at the deadline, killed) and each stream's bytes not acknowledged, from the
    offset they start at."""

    run_id: int
    pid: int
    code: int | None
    streams: dict[int, tuple[int, bytes]]


def read_results(path: Path) -> list[LeftRun]:
    """The results file a keeper left (a line cut short, or an unreadable file, is skipped)."""
    try:
        text = path.read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError, TypeError, KeyError):
            data = json.loads(line)
            streams = {
                int(s): (int(start), base64.b64decode(b64))
                for s, (start, b64) in data["streams"].items()
            }
            out.append(LeftRun(int(data["run_id"]), int(data["pid"]), data["code"], streams))
    return out


class _Given:
    """A stream whose bytes are all known already."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    async def read(self, n: int) -> bytes:
        chunk = self._data[self._at : self._at + n]
        self._at += len(chunk)
        return chunk

    def close(self) -> None:
        self._data = b""


class EndedChild(Child):
    """An agent that ended with no engine watching: its exit code and the output the store
    lacks, as a child that has exited."""

    def __init__(self, left: LeftRun, offsets: tuple[int, int]) -> None:
        streams = []
        for stream, offset in zip((1, 2), offsets, strict=True):
            start, data = left.streams.get(stream, (offset, b""))
            streams.append(_Given(data[max(0, offset - start) :]))
        super().__init__(left.pid, None, streams[0], streams[1])
        assert left.code is not None
        self._exit(left.code)

    def identity(self) -> ProcIdentity:
        return ProcIdentity(pid=self.pid, pgid=self.pid, start_time=0)
