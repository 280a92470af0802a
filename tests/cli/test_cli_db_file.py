"""A database file that is missing, damaged, read-only or deleted under the daemon: every
command says which file and what to do — never a traceback, never a new empty database, and
nothing already stored is lost."""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

import tui
from tests.cli.cli_support import (
    Result,
    Tui,
    assert_no_traceback,
    shell_task,
    wait_until,
    write_tasks,
)
from tests.conftest import stop_process
from tests.model.hostile_files import billion_laughs

READS = (("ls",), ("logs", "a"), ("questions",))


def _stored(tui: Tui) -> Path:
    """A database holding task `a` (COMPLETED) and 20,000 output lines: a few dozen pages."""
    f = write_tasks(tui.dir / "a.yaml", shell_task("a", "seq 1 20000"))
    res = tui("run", str(f))
    assert res.returncode == 0, str(res)
    return write_tasks(tui.dir / "b.yaml", shell_task("b", "echo b"))


def _refused(res: Result, path: Path, *words: str) -> None:
    assert res.returncode == 1, str(res)
    assert_no_traceback(res)
    assert str(path) in res.stderr, str(res)
    for w in words:
        assert w in res.stderr, str(res)


def test_read_commands_never_create_a_database(tui: Tui) -> None:
    for parent in (tui.dir, tui.dir / "not" / "there"):
        tui.db = parent / "tui.db"
        for args in READS:
            _refused(tui(*args), tui.db, "no database at")
        assert not tui.db.exists() and not list(parent.glob("tui.db*"))
    assert not (tui.dir / "not").exists()


REFUSED_FILES: dict[str, str | dict[str, Any]] = {
    "a key in env": {
        "name": "k",
        # Shaped like a real key, made up (split so no scanner mistakes it for a leak).
        "agent": {
            "type": "shell",
            "instructions": "true",
            "env": {"FOO": "sk-ant-" + "api03-Zq8" + "x7Vw2" * 12},
        },
    },
    "an alias bomb": billion_laughs(),
    "a validation error": {"name": "v", "timeout": "soon", "agent": {"type": "shell"}},
}


@pytest.mark.parametrize("command", ["run", "open"])
@pytest.mark.parametrize("bad", sorted(REFUSED_FILES))
def test_a_refused_file_on_a_new_path_leaves_no_database(tui: Tui, bad: str, command: str) -> None:
    content = REFUSED_FILES[bad]
    f = tui.dir / "bad.yaml"
    if isinstance(content, str):
        f.write_text(content)
    else:
        write_tasks(f, content)
    res = tui(command, str(f))
    assert res.returncode != 0, str(res)
    assert str(f) in res.stderr, str(res)
    assert not list(tui.dir.glob("tui.db*")), f"{bad}: an empty database was left behind"
    # A database that was there before stays, with what it held.
    _stored(tui)
    before = tui.ls()
    assert tui(command, str(f)).returncode != 0
    assert tui.ls() == before


@pytest.mark.parametrize("damage", ["pages", "tail"])
def test_a_damaged_database_is_named_with_what_to_do(tui: Tui, damage: str) -> None:
    more = _stored(tui)
    size = tui.db.stat().st_size
    assert size > 20 * 4096 and not Path(f"{tui.db}-wal").exists()
    with open(tui.db, "r+b") as f:
        if damage == "pages":  # every third page after the header's: garbage
            for page in range(1, size // 4096, 3):
                f.seek(page * 4096)
                f.write(bytes(range(256)) * 16)
        else:  # the last half gone, as a copy cut short would be
            f.truncate(size // 2)
    before = tui.db.read_bytes()
    hint = "integrity_check" if damage == "pages" else "cut short"
    for args in (*READS, ("run", str(more))):
        _refused(tui(*args), tui.db, "is damaged", hint, ".recover")
    assert tui.db.read_bytes() == before  # nothing written into it


def test_damaged_text_in_a_row_is_named_with_what_to_do(tui: Tui) -> None:
    """Bytes flipped inside a stored line (the pages themselves intact): SQLite hands them
    over, and decoding them must not end `tui logs` in a traceback."""
    _stored(tui)
    data = bytearray(tui.db.read_bytes())
    at = data.find(b"12774\n12775")
    assert at > 0 and not Path(f"{tui.db}-wal").exists()
    data[at : at + 4] = b"\xff\xfe\xff\xfe"
    tui.db.write_bytes(bytes(data))
    res = tui("logs", "a")
    _refused(res, tui.db, "is damaged", ".recover")
    assert len(res.stderr) < 2000, res.stderr  # not the whole damaged chunk
    assert [t["state"] for t in tui.ls()] == ["COMPLETED"]  # the rest still reads


@functools.cache
def _import_the_cli() -> None:
    """Every module of tui but the app's and the MCP server's (~0.4 s, once)."""
    for found in pkgutil.walk_packages(tui.__path__, "tui."):
        if not found.name.startswith(("tui.app", "tui.mcp")) and found.name != "tui.__main__":
            importlib.import_module(found.name)


def _as_nobody(args: list[str], cwd: Path) -> Result:
    """`tui ARGS` as the user nobody: the test process forks and the child drops to nobody
    before running the same entry point as the `tui` script (the venv's interpreter lives
    where nobody cannot exec it)."""
    # Imported now: once the child is nobody it cannot read the interpreter's stdlib dir, nor
    # the source tree when it was checked out in a private directory (`mktemp -d`). Every
    # module a command may import on use, rather than a list that misses the next one.
    import concurrent.futures.thread  # noqa: F401
    import tomllib  # noqa: F401

    _import_the_cli()
    from tui.cli.main import main

    out, err = cwd / f"out-{os.getpid()}", cwd / f"err-{os.getpid()}"
    pid = os.fork()
    if pid == 0:  # the child
        code = 99
        try:
            os.chdir(cwd)
            os.setgid(65534)
            os.setuid(65534)
            for fd, path in ((1, out), (2, err)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), fd)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            code = main(args)
        except BaseException:
            traceback.print_exc()  # caught as a traceback by the caller
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    res = Result(args, os.waitstatus_to_exitcode(status), out.read_text(), err.read_text())
    assert_no_traceback(res)
    return res


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_a_read_only_or_foreign_database_says_so(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> None:
    more = _stored(tui)
    os.chmod(tui.dir, 0o755)  # nobody may enter; the files decide the rest
    for d in (tui.dir.parent, tui.dir.parent.parent):
        os.chmod(d, os.stat(d).st_mode | 0o005)
    os.chmod(more, 0o644)
    monkeypatch.setenv("HOME", str(tui.dir))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tui.dir / "no-config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tui.dir / "run"))
    rw = tui.dir / "rw"  # nobody's own directory, so SQLite may keep its -shm there
    rw.mkdir()
    os.chown(rw, 65534, 65534)
    mine, foreign, secret = rw / "mine.db", rw / "foreign.db", rw / "secret.db"
    for p in (mine, foreign, secret):
        p.write_bytes(tui.db.read_bytes())
    os.chown(mine, 65534, 65534)
    os.chmod(mine, 0o400)
    os.chmod(foreign, 0o644)
    os.chmod(secret, 0o600)
    before = mine.read_bytes()

    # Reading a read-only file works; writing says why not and what to do.
    listed = _as_nobody(["ls", "--json", "--db", str(mine)], rw)
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["state"] == "COMPLETED"
    logs = _as_nobody(["logs", "a", "--db", str(mine)], rw)
    assert logs.returncode == 0 and logs.stdout.splitlines()[-1] == "20000", str(logs)
    _refused(_as_nobody(["run", str(more), "--db", str(mine)], rw), mine, "read-only", "chmod")
    _refused(_as_nobody(["run", str(more), "--db", str(foreign)], rw), foreign, "another user")
    for args in (["ls"], ["logs", "a"]):
        _refused(_as_nobody([*args, "--db", str(secret)], rw), secret, "cannot read")
    assert mine.read_bytes() == before


def _deleted_under_the_daemon(tui: Tui) -> tuple[int, Path]:
    _stored(tui)
    assert tui("daemon", "start").returncode == 0
    status = json.loads(tui("daemon", "status", "--json").stdout)
    tui.db.unlink()
    return status["pid"], Path(status["log"])


def _saved_back(tui: Tui, pid: int, log: Path) -> None:
    wait_until(lambda: not _alive(pid), "the daemon stops")
    assert f"database {tui.db} was deleted" in log.read_text()
    # Stopping, it wrote what it held back to the path: nothing is lost.
    (task,) = tui.ls()
    assert (task["name"], task["state"]) == ("a", "COMPLETED")
    logs = tui("logs", "a")
    assert logs.stdout.split() == [str(i) for i in range(1, 20001)], str(logs)[:500]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()  # a zombie has stopped too
    return stat[stat.rfind(")") + 2] != "Z"


def test_a_viewer_of_a_deleted_database_is_refused_and_nothing_is_lost(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_DB_CHECK_SECONDS", "3600")  # only a connecting viewer looks
    pid, log = _deleted_under_the_daemon(tui)
    try:
        # A read finds no file and says so, without making an empty one in its place.
        _refused(tui("ls"), tui.db, "no database at")
        assert not tui.db.exists()
        # The next viewer of the daemon is refused with the reason; the daemon stops.
        _refused(tui("daemon", "status"), tui.db, "was deleted")
        _saved_back(tui, pid, log)
    finally:
        tui("daemon", "stop")


def test_the_daemon_notices_a_deleted_database_by_itself(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_DB_CHECK_SECONDS", "0.2")
    pid, log = _deleted_under_the_daemon(tui)
    try:
        _saved_back(tui, pid, log)  # no viewer connects: the daemon's own look finds it
    finally:
        tui("daemon", "stop")


def test_a_stopping_daemon_leaves_a_newer_daemons_socket_alone(
    tui: Tui, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test directory is deleted under a live daemon, its database and socket directory
    with it: a new daemon starts for a new database at the same path and binds the same
    socket path. When the old one stops it must not unlink the new one's socket, or every
    viewer loses the daemon that runs."""
    monkeypatch.setenv("TUI_DB_CHECK_SECONDS", "3600")
    _stored(tui)
    assert tui("daemon", "start").returncode == 0
    old = json.loads(tui("daemon", "status", "--json").stdout)
    sock = Path(old["socket"])
    new_pid = None
    try:
        tui.db.rename(tui.dir / "gone.db")  # its database, socket and lock file are gone
        sock.unlink()
        sock.with_suffix(".lock").unlink()
        _stored(tui)  # a new database at the same path
        assert tui("daemon", "start").returncode == 0
        new = json.loads(tui("daemon", "status", "--json").stdout)
        new_pid = new["pid"]
        assert new_pid != old["pid"]
        stop_process(old["pid"])
        wait_until(lambda: not _alive(old["pid"]), "the old daemon stops")
        assert sock.exists(), "the old daemon removed the new daemon's socket"
        now = json.loads(tui("daemon", "status", "--json").stdout)
        assert now["pid"] == new_pid
    finally:
        stop_process(old["pid"])
        tui("daemon", "stop")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_a_full_disk_fails_the_task_that_filled_it_and_keeps_what_was_stored(tui: Tui) -> None:
    disk = tui.dir / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        tui.db = disk / "tui.db"
        filler = disk / "filler"  # most of the disk, so that the flood fills it at once
        filler.write_bytes(b"\0" * 1_000_000)
        f = write_tasks(
            tui.dir / "full.yaml",
            [shell_task("small", "seq 1 100"), shell_task("flood", f"yes {'x' * 70}")],
        )
        run = tui("run", str(f), timeout=120)  # returns: nothing stays RUNNING
        assert run.returncode == 1, str(run)
        states = {t["name"]: t for t in tui.ls()}
        assert states["small"]["state"] == "COMPLETED"
        assert states["flood"]["state"] == "FAILED"
        assert states["flood"]["reason"].startswith("database disk is full: "), states
        assert str(tui.db) in states["flood"]["reason"]
        assert tui("logs", "small").stdout.split() == [str(i) for i in range(1, 101)]

        # Space comes back: the same database takes new work, and it is sound.
        filler.unlink()
        more = write_tasks(tui.dir / "more.yaml", shell_task("after", "seq 1 1000"))
        again = tui("run", str(more), timeout=120)
        assert again.returncode == 0, str(again)
        assert tui("logs", "after").stdout.split() == [str(i) for i in range(1, 1001)]
        assert tui.sql("PRAGMA integrity_check") == [("ok",)]
    finally:
        subprocess.run(["umount", "-l", str(disk)])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tmpfs")
def test_a_database_on_a_read_only_mount_says_so_and_what_to_do(tui: Tui) -> None:
    """SQLite needs to make its -wal and -shm beside a WAL database even to read it; on a
    read-only mount it says only "unable to open database file"."""
    disk = tui.dir / "ro"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        tui.db = disk / "tui.db"
        b = _stored(tui)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        for args in (*READS, ("run", str(b))):
            _refused(tui(*args), tui.db, "is not writable", f"cp {tui.db} ")
    finally:
        subprocess.run(["umount", "-l", str(disk)])
