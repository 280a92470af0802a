"""kill -9 of a foreground `tui run` within milliseconds of its spawns, round after round:
the next `tui run` finds every process of the dead engine's runs (even one whose pid was not
stored yet), so every task's side effect happens exactly once and no process is left behind.

TUI_CHAOS_ROUNDS sets the number of rounds (default 6; a soak: 100).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

from cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks

ROUNDS = int(os.environ.get("TUI_CHAOS_ROUNDS", "6"))
TASKS = 6

# Under the first engine (CHAOS_HOLD set) a task holds before its side effect, so only a
# process recovery failed to kill could ever do it; under the second it does it at once.
SCRIPT = """\
# {marker}
if [ -n "$CHAOS_HOLD" ]; then sleep 60; fi
echo "{name}" >> "{side}"
"""


def test_kill_9_just_after_spawns_never_runs_a_task_twice(tui: Tui) -> None:
    rng = random.Random()
    in_window = 0
    for rnd in range(ROUNDS):
        marker = tui.marker()
        side = tui.dir / f"side-{rnd}.txt"
        names = [f"r{rnd}t{i}" for i in range(TASKS)]
        f = write_tasks(
            tui.dir / f"round-{rnd}.yaml",
            [shell_task(n, SCRIPT.format(marker=marker, name=n, side=side)) for n in names],
        )
        first = subprocess.Popen(
            [*tui._argv(("run", str(f), "--concurrency", str(TASKS)), True)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=tui.dir,
            env={**os.environ, "CHAOS_HOLD": "1"},
        )
        tui.popens.append(first)
        # The first spawns follow the first run row's commit at once.
        wait_until(lambda: open_runs(tui), "a run to start", timeout=60, proc=first)
        time.sleep(rng.uniform(0, 0.06))  # the instant of the crash: 0-60 ms after a spawn
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
        in_window += open_runs(tui, "AND pid IS NULL") > 0

        res = tui("run", timeout=120)  # recovers and carries every task on
        assert res.returncode == 0, str(res)
        done = sorted(side.read_text().split()) if side.exists() else []
        assert done == sorted(names), f"round {rnd}: side effects {done}"
        assert marker_processes(marker) == [], f"round {rnd}: processes left behind"
        assert open_runs(tui) == 0
    print(f"{ROUNDS} rounds, {in_window} killed before a spawned process's pid was stored")


def open_runs(tui: Tui, more: str = "") -> int:
    rows = tui.sql(f"SELECT COUNT(*) FROM runs WHERE ended_at IS NULL {more}")
    return rows[0][0] if rows else 0
