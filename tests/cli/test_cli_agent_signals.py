"""An agent starts with the signal dispositions any program started from the shell has: a
script's `trap … HUP` works (a signal ignored on entry to a shell cannot be trapped)."""

from __future__ import annotations

import subprocess

from tests.cli.cli_support import Tui, shell_task, write_tasks


def ignored_mask(text: str) -> int:
    [line] = [ln for ln in text.splitlines() if ln.startswith("SigIgn:")]
    return int(line.split()[1], 16)


def test_agents_ignore_no_signal_their_caller_did_not(tui: Tui) -> None:
    here = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True)
    f = write_tasks(
        tui.dir / "sig.yaml",
        [
            shell_task("status", "cat /proc/self/status"),
            # The trap runs only if SIGHUP reaches the script's handler.
            shell_task("trap", "trap 'echo caught HUP' HUP; kill -HUP $$; echo after"),
        ],
    )
    assert tui("run", str(f)).returncode == 0
    shown = tui("logs", "status")
    assert ignored_mask(shown.stdout) == ignored_mask(here.stdout), shown.stdout
    trapped = tui("logs", "trap")
    assert trapped.stdout.splitlines()[-2:] == ["caught HUP", "after"], trapped
