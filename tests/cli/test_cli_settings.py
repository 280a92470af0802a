"""[settings] from config.toml reach the engine: flag > local > global > built-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_support import Tui, shell_task, write_tasks

SHELL_NAME = 'echo "shell=$(cat /proc/$$/comm)"'


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "global"
    d.mkdir()
    monkeypatch.setenv("TUI_CONFIG_DIR", str(d))
    monkeypatch.delenv("TUI_DB", raising=False)
    return d


def test_shell_and_database_come_from_the_config(tui: Tui, config_dir: Path) -> None:
    (config_dir / "config.toml").write_text('[settings]\nshell = "bash"\n', encoding="utf-8")
    (tui.dir / ".tui").mkdir()
    (tui.dir / ".tui" / "config.toml").write_text(
        '[settings]\nshell = "sh"\ndatabase = "state.db"\n', encoding="utf-8"
    )
    tasks = write_tasks(tui.dir / "t.yaml", [shell_task("which", SHELL_NAME)])
    res = tui("run", str(tasks), db=False)
    assert res.returncode == 0, str(res)
    assert (tui.dir / "state.db").exists()  # the local [settings] database, relative to it
    logs = tui("logs", "which", db=False)
    assert logs.stdout == "shell=sh\n", str(logs)  # local beats global


def test_a_flag_beats_the_config(tui: Tui, config_dir: Path) -> None:
    (config_dir / "config.toml").write_text('[settings]\nshell = "sh"\n', encoding="utf-8")
    tasks = write_tasks(tui.dir / "t.yaml", [shell_task("which", SHELL_NAME)])
    assert tui("run", str(tasks), "--shell", "bash").returncode == 0
    assert tui("logs", "which").stdout == "shell=bash\n"


def test_a_broken_config_is_a_clear_error(tui: Tui, config_dir: Path) -> None:
    path = config_dir / "config.toml"
    path.write_text("[settings]\nconcurrency = -1\n", encoding="utf-8")
    res = tui("run", db=False)
    assert res.returncode == 2
    assert f"{path}" in res.stderr and "settings.concurrency" in res.stderr, str(res)
