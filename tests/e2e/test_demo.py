"""`scripts/demo` as a newcomer runs it: the app on the samples, and nothing left behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_tmux import ROOT, Tmux, tmux, wait

__all__ = ["tmux"]  # the fixture, used by name

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_demo_says_what_it_does_and_cleans_up(tmux: Tmux, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = (
        f"TMPDIR={scratch} TUI_STATE_DIR={tmp_path / 'state'} "
        f"TUI_CONFIG_DIR={tmp_path / 'config'} XDG_RUNTIME_DIR={os.environ['XDG_RUNTIME_DIR']} "
        f"TUI_NOTIFY=off PATH={os.environ['PATH']}"
    )
    tmux("new-session", "-d", "-s", "tui", "-x", "120", "-y", "40")
    tmux("set-option", "-t", "tui", "remain-on-exit", "on")  # the words left after it ends
    tmux("respawn-pane", "-k", "-t", "tui", f"cd {ROOT} && env {env} scripts/demo")
    # The app is up and following events (a finished task shows), so it takes keys.
    up = lambda: "checkout" in (s := tmux.screen()) and "✓" in s and "q Quit" in s  # noqa: E731
    wait(up, "the app on the samples", seconds=90)
    assert [p.name for p in scratch.iterdir()] != [], "the database dir while the app runs"
    tmux("send-keys", "-t", "tui", "q")
    dead = lambda: tmux("display-message", "-p", "-t", "tui", "#{pane_dead}").strip() == "1"  # noqa: E731
    try:
        wait(dead, "the demo to end", seconds=60)  # stopping the daemon ends its running tasks
    except AssertionError as e:
        raise AssertionError(f"{e}; the screen:\n{tmux.screen()}") from None
    words = tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", "tui")  # wrapped lines joined
    assert "demo: opening the app on sample_tasks/" in words
    assert "demo: stopped the demo's daemon" in words
    assert not list(scratch.iterdir()), "the database dir is removed"
