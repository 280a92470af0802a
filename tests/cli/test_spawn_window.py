"""kill -9 of a foreground `tui run` within milliseconds of its spawns, round after round:
the next `tui run` finds every process of the dead engine's runs (even one whose pid was not
stored yet), so every task's side effect happens exactly once and no process is left behind:
a shell agent the dead engine's keeper kept is adopted by the next `tui run`, any other one
is killed and run again.

TUI_CHAOS_ROUNDS sets the number of rounds (default 6; a soak: 100).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

from tests.cli.cli_support import Tui, marker_processes, shell_task, wait_until, write_tasks
from tui.engine.dispatch import AHEAD

ROUNDS = int(os.environ.get("TUI_CHAOS_ROUNDS", "6"))
TASKS = 6

# Under the first engine (CHAOS_HOLD set) a task holds before its side effect until the
# first engine is dead (then it is either adopted by the second, or killed and run again);
# under the second it does it at once.
SCRIPT = """\
# {marker}
if [ -n "$CHAOS_HOLD" ]; then while [ ! -e "$CHAOS_HOLD" ]; do sleep 0.01; done; fi
echo "{name}" >> "{side}"
"""


def test_kill_9_just_after_spawns_never_runs_a_task_twice(tui: Tui) -> None:
    rng = random.Random()
    in_window = 0
    for rnd in range(ROUNDS):
        marker = tui.marker()
        side = tui.dir / f"side-{rnd}.txt"
        go = tui.dir / f"go-{rnd}"
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
            env={**os.environ, "CHAOS_HOLD": str(go)},
        )
        tui.popens.append(first)
        # The first spawns follow the first run row's commit at once.
        wait_until(lambda: open_runs(tui), "a run to start", timeout=60, proc=first)
        time.sleep(rng.uniform(0, 0.06))  # the instant of the crash: 0-60 ms after a spawn
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
        in_window += open_runs(tui, "AND pid IS NULL") > 0
        go.touch()

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


HANDOVER_TASKS = 40
HANDOVER_CONCURRENCY = 2


def test_kill_9_while_runs_hand_their_slots_on_leaves_a_state_recovery_carries_on(
    tui: Tui,
) -> None:
    """Quick tasks through two slots: nearly every start rides in the transaction of the run
    before it ending, and once runs are quick two more are sent ahead to the keeper, which
    starts each as a slot frees (tui.engine.dispatch). A kill -9 at any instant leaves every
    task either without an open run, or RUNNING with exactly one, never more open runs than
    slots plus those sent ahead, and the next `tui run` finishes every task, each once, with
    nothing left behind."""
    rng = random.Random()
    for rnd in range(ROUNDS):
        marker = tui.marker()
        side = tui.dir / f"handover-{rnd}.txt"
        names = [f"h{rnd}t{i}" for i in range(HANDOVER_TASKS)]
        f = write_tasks(
            tui.dir / f"handover-{rnd}.yaml",
            [shell_task(n, f'# {marker}\necho "{n}" >> "{side}"') for n in names],
        )
        first = subprocess.Popen(
            [*tui._argv(("run", str(f), "--concurrency", str(HANDOVER_CONCURRENCY)), True)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=tui.dir,
        )
        tui.popens.append(first)
        mine = f"h{rnd}t%"

        def one_ended(mine: str = mine) -> bool:
            return ended_runs(tui, mine) > 0

        wait_until(one_ended, "a run to end", timeout=60, proc=first)
        time.sleep(rng.uniform(0, 0.1))  # the instant of the crash, among the handovers
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)

        bad = tui.sql(
            "SELECT t.name, t.state, COUNT(r.id) FROM tasks t LEFT JOIN runs r"
            " ON r.task_id = t.id AND r.ended_at IS NULL GROUP BY t.id"
            " HAVING (t.state = 'RUNNING') != (COUNT(r.id) = 1)"
        )
        assert bad == [], f"round {rnd}: tasks and open runs disagree: {bad}"
        assert open_runs(tui) <= HANDOVER_CONCURRENCY + min(HANDOVER_CONCURRENCY, AHEAD)

        res = tui("run", timeout=120)  # recovers and carries every task on
        assert res.returncode == 0, str(res)
        states = tui.sql(
            "SELECT state, COUNT(*) FROM tasks WHERE name LIKE ? GROUP BY state", (f"h{rnd}t%",)
        )
        assert states == [("COMPLETED", HANDOVER_TASKS)], f"round {rnd}: {states}"
        done = set(side.read_text().split())
        assert done == set(names), f"round {rnd}: missing {set(names) - done}"
        assert marker_processes(marker) == [], f"round {rnd}: processes left behind"
        assert open_runs(tui) == 0


def ended_runs(tui: Tui, names: str) -> int:
    rows = tui.sql(
        "SELECT COUNT(*) FROM runs r JOIN tasks t ON t.id = r.task_id"
        " WHERE r.ended_at IS NOT NULL AND t.name LIKE ?",
        (names,),
    )
    return rows[0][0] if rows else 0
