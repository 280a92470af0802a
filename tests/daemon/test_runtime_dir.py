"""The daemon's socket directory cannot be planted by another user: without XDG_RUNTIME_DIR it
is $TMPDIR/tui-UID, a name anyone can create first (as a symlink, or a directory of theirs)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tui.daemon.paths import RuntimeDirError, runtime_dir

OTHER_UID = 54321  # no account needed: root can chown to any uid


@pytest.fixture
def tmpdir_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No XDG_RUNTIME_DIR: the runtime dir is under this $TMPDIR."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer
    return base


def planted(base: Path) -> Path:
    return base / f"tui-{os.getuid()}"


def test_created_owner_only(tmpdir_base: Path) -> None:
    d = runtime_dir()
    assert d == planted(tmpdir_base)
    st = os.lstat(d)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert runtime_dir() == d  # and found again as it is


def test_a_symlink_is_refused_and_its_target_left_alone(tmpdir_base: Path) -> None:
    victim = tmpdir_base / "victims-dir"
    victim.mkdir(mode=0o755)
    os.chmod(victim, 0o755)
    planted(tmpdir_base).symlink_to(victim)
    with pytest.raises(RuntimeDirError, match="symlink") as refused:
        runtime_dir()
    assert str(planted(tmpdir_base)) in str(refused.value)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755  # not chmodded through the link
    assert list(victim.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown a directory to another uid")
def test_a_directory_of_another_user_is_refused(tmpdir_base: Path) -> None:
    d = planted(tmpdir_base)
    d.mkdir(mode=0o700)
    os.chown(d, OTHER_UID, OTHER_UID)
    with pytest.raises(RuntimeDirError, match=f"owned by uid {OTHER_UID}"):
        runtime_dir()


def test_group_or_other_bits_are_refused(tmpdir_base: Path) -> None:
    d = planted(tmpdir_base)
    d.mkdir()
    os.chmod(d, 0o770)
    with pytest.raises(RuntimeDirError, match="chmod 700"):
        runtime_dir()
    assert stat.S_IMODE(d.stat().st_mode) == 0o770  # refused, not silently "fixed"


def test_a_file_in_its_place_is_refused(tmpdir_base: Path) -> None:
    planted(tmpdir_base).write_text("")
    with pytest.raises(RuntimeDirError, match="not a directory"):
        runtime_dir()


def test_the_cli_says_so_without_a_traceback(tmpdir_base: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    planted(tmpdir_base).symlink_to(victim)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(tmpdir_base)
    res = subprocess.run(
        [sys.executable, "-m", "tui", "daemon", "status", "--db", str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr
    assert f"{planted(tmpdir_base)} is a symlink" in res.stderr
    assert list(victim.iterdir()) == []  # no lock, no socket through the link
