"""The ``runs`` table: one row per attempt, with the process that ran it and how it ended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui.model.states import State
from tui.store import questions, tasks
from tui.store.batch import Tx
from tui.store.records import RunRecord, RunStart, TaskRecord

COLS = (
    "id, task_id, attempt, engine_id, pid, pgid, proc_start, started_at, ended_at, exit_code,"
    " outcome, error, cost_usd, tokens_in, tokens_out, session_id, node"
)

# A run's process as the engine learnt it: pid, process group, and its start time (a function:
# it is read with the transaction, not when noted: /proc of a child in exec can make it wait).
Process = tuple[int, int, int | Callable[[], int | None] | None]

_COUNT_ATTEMPT: tasks.Sets = ("attempts = attempts + 1", ())
_ASKED = ", EXISTS (SELECT 1 FROM questions WHERE task_id = tasks.id)"


def start(
    t: Tx, task_id: str, engine_id: str, now: float, deps: list[str] | None = None
) -> RunStart | None:
    """QUEUED → RUNNING (the checked transition) plus a new run row, and what the new attempt
    may need to know: the task's earlier runs and every question asked about it. ``deps`` as
    for :func:`tasks.transition`."""
    # The task's reason is cleared (a running task has none to show); the journal says which
    # attempt this is. One statement moves it, counts the attempt and says whether anyone
    # ever asked about the task (most never are: no read of the questions then).
    move = tasks.Move(task_id, State.QUEUED, State.RUNNING, "", {"retry_at": None})
    moved = tasks.move_row(
        t, move, now, sets=_COUNT_ATTEMPT, returning=_ASKED, read=tasks.STARTED_COLS
    )
    if moved is None:
        return None
    row, current = moved
    rec = tasks.from_row(row, list(deps) if deps is not None else tasks.deps_of(t, task_id))
    attempt, asked = rec.attempts, row[-1]
    cur = t.db.execute(
        "INSERT INTO runs (task_id, attempt, engine_id, started_at) VALUES (?,?,?,?)",
        (task_id, attempt, engine_id, now),
    )
    run_id = int(cur.lastrowid or 0)
    # The journal row names the run, known only now.
    data = {"run_id": run_id, "attempt": attempt}
    t.event(task_id, "state", current, State.RUNNING, f"attempt {attempt}", data, now)
    # ``attempts`` counts every run row ever written for the task (here, and only here): a
    # first attempt has no earlier runs to read.
    runs = (
        t.all(
            f"SELECT {COLS} FROM runs WHERE task_id = ? AND id != ? ORDER BY id",
            (task_id, run_id),
        )
        if attempt > 1
        else []
    )
    # ``rec`` was read before this run's row existed: give it this run's start (no node yet).
    rec.run_started_at, rec.run_ended_at = now, None
    asked_about = questions.of_task(t, task_id) if asked else []
    return RunStart(run_id, attempt, [RunRecord(*r) for r in runs], asked_about, rec)


def set_process(
    t: Tx, run_id: int, pid: int, pgid: int, proc_start: int | Callable[[], int | None] | None
) -> None:
    start = proc_start() if callable(proc_start) else proc_start
    t.db.execute(
        "UPDATE runs SET pid = ?, pgid = ?, proc_start = ? WHERE id = ?",
        (pid, pgid, start, run_id),
    )


def set_node(t: Tx, run_id: int, node: str, now: float) -> TaskRecord | None:
    """Where the run was placed; the task as it now reads (viewers show the node)."""
    row = t.one("SELECT task_id FROM runs WHERE id = ?", (run_id,))
    if not row:
        return None
    t.db.execute("UPDATE runs SET node = ? WHERE id = ?", (node, run_id))
    t.event(row[0], "node", None, None, "", {"run_id": run_id, "node": node}, now)
    return tasks.get(t, row[0])


def set_session(t: Tx, run_id: int, session_id: str) -> None:
    t.db.execute("UPDATE runs SET session_id = ? WHERE id = ?", (session_id, run_id))


def set_task_result(t: Tx, run_id: int, result: str) -> None:
    """The result of the run's task (JSON), written with the run's end."""
    t.db.execute(
        "UPDATE tasks SET result = ? WHERE id = (SELECT task_id FROM runs WHERE id = ?)",
        (result, run_id),
    )


def end(
    t: Tx,
    run_id: int,
    fields: dict[str, Any],
    now: float,
    *,
    journal: bool = True,
    result: str | None = None,
    totals: bool = True,
    proc: Process | None = None,
) -> dict[str, Any] | None:
    """Close a run (once) and add its cost and tokens to the task's totals (and store
    ``result`` as the task's, if given). Returns what the journal says of it (None if it was
    already closed); ``journal=False`` leaves writing that to the caller (:func:`journal_end`,
    or the data of the task's next state), ``totals=False`` the totals and the result
    (:func:`totals`: the assignments for the task's next move, or :func:`add_totals`).
    ``proc``: the run's process, written in the same statement (not by one of its own)."""
    f = fields
    args = (
        now,
        f["outcome"],
        f["exit_code"],
        f["error"],
        f["cost_usd"],
        f["tokens_in"],
        f["tokens_out"],
        f["session_id"],
    )
    # One statement closes it only if still open and says whose it is (a SELECT first cost
    # one more per run).
    if proc is None:
        rows = t.all(_END, (*args, run_id))
    else:
        pid, pgid, start = proc
        rows = t.all(_END_PROCESS, (*args, pid, pgid, _start_time(start), run_id))
    if not rows:
        if result is not None:
            set_task_result(t, run_id, result)
        return None
    task_id = rows[0][0]
    if totals:
        add_totals(t, task_id, fields, result)
    data = {"task_id": task_id, "run_id": run_id, **f}
    if journal:
        journal_end(t, data, now)
    return data


_END_SETS = (
    "UPDATE runs SET ended_at = ?, outcome = ?, exit_code = ?, error = ?, cost_usd = ?,"
    " tokens_in = ?, tokens_out = ?,"
    # A run closed without one (recovery) keeps the session it reported earlier.
    " session_id = coalesce(nullif(?, ''), session_id)"
)
_END = _END_SETS + " WHERE id = ? AND ended_at IS NULL RETURNING task_id"
_END_PROCESS = (
    _END_SETS + ", pid = ?, pgid = ?, proc_start = ? WHERE id = ? AND ended_at IS NULL"
    " RETURNING task_id"
)


def _start_time(start: int | Callable[[], int | None] | None) -> int | None:
    """A process's start time, as ``set_process`` takes it; None if it cannot be read (the
    run's end is stored all the same: recovery then leaves the process alone)."""
    if not callable(start):
        return start
    try:
        return start()
    except Exception:
        return None


def totals(fields: dict[str, Any], result: str | None) -> tasks.Sets:
    """A run's cost and tokens added to its task's totals, and its result stored (if any):
    assignments to make with the task's next move (one statement on the task's row)."""
    return (
        "cost_usd = cost_usd + ?, tokens_in = tokens_in + ?, tokens_out = tokens_out + ?,"
        " result = CASE WHEN ? THEN ? ELSE result END",
        (fields["cost_usd"], fields["tokens_in"], fields["tokens_out"], result is not None, result),
    )


def add_totals(t: Tx, task_id: str, fields: dict[str, Any], result: str | None) -> None:
    """:func:`totals` alone, when the task makes no move with them."""
    sets, args = totals(fields, result)
    t.db.execute(f"UPDATE tasks SET {sets} WHERE id = ?", (*args, task_id))


def journal_end(t: Tx, ended: dict[str, Any], now: float) -> None:
    """The journal row of a run's end that no state change carries (see :func:`end`)."""
    data = {k: v for k, v in ended.items() if k != "task_id"}
    t.event(ended["task_id"], "run_ended", None, None, ended["outcome"], data, now)


def select(t: Tx, task_id: str | None, open_only: bool) -> list[RunRecord]:
    sql = f"SELECT {COLS} FROM runs WHERE 1=1"
    args: list[Any] = []
    if task_id is not None:
        sql += " AND task_id = ?"
        args.append(task_id)
    if open_only:
        sql += " AND ended_at IS NULL"
    return [RunRecord(*r) for r in t.all(sql + " ORDER BY id", args)]
