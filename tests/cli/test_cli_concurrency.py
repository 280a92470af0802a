"""`--concurrency N` as the task processes themselves observe it."""

from __future__ import annotations

from tests.cli.cli_support import Tui, shell_task, write_tasks
from tui.engine.dispatch import AHEAD

TASKS = 8
LIMIT = 3

# Each task marks itself active (and started, for good), logs how many tasks are active,
# then waits until LIMIT tasks are active at once or every task has started (after which no
# more can come), logs the count it saw, and leaves. No timing is involved: with the engine
# keeping LIMIT slots busy one of those two conditions always comes true, and the first
# LIMIT tasks can only leave once all of them are active together, so LIMIT is reached.
SCRIPT = """\
active="{dir}/active"; started="{dir}/started"; log="{dir}/counts.log"
mkdir "$active/$TUI_TASK_ID" "$started/$TUI_TASK_ID"
echo "$(ls "$active" | wc -l)" >> "$log"
for _ in $(seq 1 3000); do
  n=$(ls "$active" | wc -l); s=$(ls "$started" | wc -l)
  if [ "$n" -ge {limit} ] || [ "$s" -ge {total} ]; then
    echo "$n" >> "$log"
    rmdir "$active/$TUI_TASK_ID"
    exit 0
  fi
  sleep 0.01
done
echo "barrier never opened: $n active, $s started" >&2
rmdir "$active/$TUI_TASK_ID"
exit 1
"""


def test_concurrency_limit_is_reached_and_never_exceeded(tui: Tui) -> None:
    for sub in ("active", "started"):
        (tui.dir / sub).mkdir()
    script = SCRIPT.format(dir=tui.dir, limit=LIMIT, total=TASKS)
    f = write_tasks(tui.dir / "many.yaml", [shell_task(f"w{i}", script) for i in range(TASKS)])
    res = tui("run", str(f), "--concurrency", str(LIMIT), timeout=90)
    assert res.returncode == 0, str(res)
    assert all(t["state"] == "COMPLETED" for t in tui.ls())
    counts = [int(x) for x in (tui.dir / "counts.log").read_text().split()]
    assert len(counts) == 2 * TASKS
    assert max(counts) <= LIMIT, counts
    assert max(counts) == LIMIT, counts
    assert len(list((tui.dir / "started").iterdir())) == TASKS
    # The engine's own record: LIMIT RUNNING at once, and at most as many more as it sends
    # ahead of a free slot once runs are quick (their agents start only as slots free: the
    # counts above; tui.engine.dispatch).
    running = 0
    peak = 0
    for _, _, frm, to, _ in tui.transitions():
        running += (to == "RUNNING") - (frm == "RUNNING")
        peak = max(peak, running)
    assert LIMIT <= peak <= LIMIT + min(LIMIT, AHEAD)
