"""A global config dir and a project dir per test, both empty until a test writes them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Dirs:
    global_dir: Path
    project: Path

    def write_global(self, text: str) -> Path:
        self.global_dir.mkdir(parents=True, exist_ok=True)
        path = self.global_dir / "config.toml"
        path.write_text(text, encoding="utf-8")
        return path

    def write_local(self, text: str) -> Path:
        (self.project / ".tui").mkdir(parents=True, exist_ok=True)
        path = self.project / ".tui" / "config.toml"
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    d = Dirs(tmp_path / "global", tmp_path / "project")
    d.project.mkdir()
    monkeypatch.setenv("TUI_CONFIG_DIR", str(d.global_dir))
    monkeypatch.chdir(d.project)
    monkeypatch.delenv("TUI_DB", raising=False)
    monkeypatch.delenv("TUI_NOTIFY", raising=False)
    return d
