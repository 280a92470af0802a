"""The ``tasks`` and ``deps`` tables, and the one checked transition every state change uses."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from tui.model.states import TRANSITIONS, State, valid_transition
from tui.model.task import Task, priority_rank
from tui.store.batch import Tx
from tui.store.errors import StoreError
from tui.store.records import TaskRecord

COLS = (
    "id, name, spec, state, reason, approved, attempts, attempt_base, retry_at, cost_usd,"
    " tokens_in, tokens_out, rejection_comment, question_json, result, created_at, updated_at,"
    " submit_seq"
)
# What reads return besides: the latest run's start and end (the app's TIME column).
READ_COLS = (
    COLS + ", (SELECT started_at FROM runs WHERE task_id = tasks.id ORDER BY id DESC LIMIT 1),"
    " (SELECT ended_at FROM runs WHERE task_id = tasks.id ORDER BY id DESC LIMIT 1),"
    " (SELECT node FROM runs WHERE task_id = tasks.id ORDER BY id DESC LIMIT 1), summary"
)
# What a run's start returns: the latest run is the one it starts, its times and node known
# without reading the runs table (three lookups per start).
STARTED_COLS = COLS + ", NULL, NULL, NULL, summary"
_SEQ = 17  # submit_seq's place in the columns

# More assignments for a move's UPDATE: (SQL of ours, its arguments).
Sets = tuple[str, tuple[Any, ...]]
NO_SETS: Sets = ("", ())


@dataclass(frozen=True)
class Move:
    """A compare-and-set transition, alone or along with another write."""

    task_id: str
    expected: State | Collection[State]
    to: State
    reason: str = ""
    updates: dict[str, Any] = field(default_factory=dict)


def transition(
    t: Tx,
    move: Move,
    now: float,
    data: dict[str, Any] | None = None,
    deps: list[str] | None = None,
    likely: State | None = None,
    sets: Sets = NO_SETS,
) -> TaskRecord | None:
    """Move the task if it is now in ``move.expected`` and the state table allows it; log the
    move in the journal (with ``data``). Returns the updated task, or None (nothing changed).
    ``deps``: the task's dependencies if the caller knows them (they never change once stored),
    which saves reading them again; ``likely`` and ``sets`` as for :func:`move_row`."""
    moved = change_state(t, move, now, deps, likely, sets)
    if moved is None:
        return None
    rec, frm = moved
    t.event(move.task_id, "state", frm, move.to, move.reason, data, now)
    return rec


def change_state(
    t: Tx,
    move: Move,
    now: float,
    deps: list[str] | None = None,
    likely: State | None = None,
    sets: Sets = NO_SETS,
) -> tuple[TaskRecord, State] | None:
    """The compare-and-set of :func:`transition` without its journal row, for a caller that
    writes the row itself once it knows what to put in it. Returns (task, previous state)."""
    moved = move_row(t, move, now, likely, sets)
    if moved is None:
        return None
    row, frm = moved
    return from_row(row, list(deps) if deps is not None else deps_of(t, move.task_id)), frm


def legal_from(move: Move) -> list[State]:
    """The states of ``move.expected`` that the state table lets the task leave for
    ``move.to``, in the order given."""
    expected = move.expected
    states = (expected,) if isinstance(expected, State) else expected
    to = move.to
    # The table's own pairs when both are States (valid_transition makes States of its
    # arguments first: ~1 µs a check, two checks a transition).
    if type(to) is State:
        return [s for s in states if (s, to) in TRANSITIONS or valid_transition(s, to)]
    return [s for s in states if valid_transition(s, to)]


def move_row(
    t: Tx,
    move: Move,
    now: float,
    likely: State | None = None,
    sets: Sets = NO_SETS,
    returning: str = "",
    read: str = READ_COLS,
) -> tuple[tuple[Any, ...], State] | None:
    """The compare-and-set itself: (the task's row as the move left it, the state it left),
    or None. Only a state of :func:`legal_from` is ever left. One ``UPDATE … WHERE state = ?``
    when only one state can be left, or when ``likely`` (the caller's belief) is right; the
    task's state is read first only otherwise. The row is ``read`` then ``returning``;
    ``sets``: more assignments made with the move (SQL of ours, never user text, and its
    arguments), e.g. ``("attempts = attempts + 1", ())``.
    """
    allowed = legal_from(move)
    if not allowed:
        return None
    guess = allowed[0] if len(allowed) == 1 else likely if likely in allowed else None
    if guess is not None:
        row = _set_state(t, move, guess, now, sets, returning, read)
        if row is not None or len(allowed) == 1:
            return (row, guess) if row is not None else None
    found = t.one("SELECT state FROM tasks WHERE id = ?", (move.task_id,))
    if not found or found[0] == guess or found[0] not in allowed:
        return None
    current = _STATES[found[0]]
    row = _set_state(t, move, current, now, sets, returning, read)
    return (row, current) if row is not None else None


def _set_state(
    t: Tx, move: Move, current: State, now: float, sets: Sets, returning: str, read: str
) -> tuple[Any, ...] | None:
    cols = {"state": VALUES[move.to], "reason": move.reason, "updated_at": now, **move.updates}
    more, more_args = sets
    key = (more, tuple(move.updates), read + returning)  # what the statement's text says
    sql = _UPDATES.get(key)
    if sql is None:
        # ``sets`` first: the move's own columns are assigned last, and SQLite keeps the last
        # assignment of a column (a move that sets ``result`` overrides the run's).
        assigns = (f"{more}, " if more else "") + ", ".join(f"{k} = ?" for k in cols)
        sql = f"UPDATE tasks SET {assigns} WHERE id = ? AND state = ? RETURNING {read}"
        sql = _UPDATES[key] = sql + returning
    rows = t.all(sql, (*more_args, *cols.values(), move.task_id, VALUES[current]))
    return rows[0] if len(rows) == 1 else None


# The text of each kind of move's UPDATE, made once: a handful of kinds (a queue move, a
# start, a run's end with its totals...), each made ~1,000 times a run of 1,000 tasks.
_UPDATES: dict[tuple[str, tuple[str, ...], str], str] = {}


def insert(
    t: Tx,
    tasks: Sequence[Task],
    approved: bool,
    now: float,
    queued: Collection[str] = (),
    queued_reason: str = "",
) -> list[TaskRecord]:
    """Store new tasks as PENDING, all or none. Ids already stored are refused.

    The tasks of ``queued`` are stored QUEUED (``queued_reason``) instead: the journal reads
    as if each had been moved PENDING → QUEUED right after the insert (every ``submitted``
    row, then their ``state`` rows in the tasks' order), without an UPDATE of each row."""
    taken = _existing_ids(t, [task.id for task in tasks])
    if taken:
        raise StoreError(
            "task ids already stored: "
            + ", ".join(sorted(taken))
            + " (continue them with `tui run` and no file, or `tui retry ID`)"
        )
    (seq,) = t.one("SELECT COALESCE(MAX(submit_seq), 0) FROM tasks")
    rows = []
    out = []
    deps: list[tuple[str, str]] = []  # one statement for the batch (most tasks have none)
    queued = set(queued)
    flag = int(approved)
    pending, ready = (State.PENDING, ""), (State.QUEUED, queued_reason)
    # Rows built first and written by one statement each (tasks, journal, deps), in the order
    # the per-task statements wrote them: the same rows and rowids, ~1 µs a row less.
    for i, task in enumerate(tasks, start=seq + 1):
        tid, name, after = task.id, task.name, task.depends_on
        state, reason = ready if tid in queued else pending
        rows.append(
            (
                tid,
                name,
                task.model_dump_json(),
                VALUES[state],
                reason,
                priority_rank(task.priority),
                i,
                flag,
                task.parent_task_id,
                now,
                now,
            )
        )
        if after:
            deps += [(tid, d) for d in after]
        # Positional, in TaskRecord's field order: keywords cost twice as much (1,000 a batch).
        out.append(
            TaskRecord(
                tid, name, task, state, reason, approved, 0, 0, None, 0.0, 0, 0, "", None, None,
                now, now, i, list(dict.fromkeys(after)),
            )
        )  # fmt: skip
    t.db.executemany(
        "INSERT INTO tasks (id, name, spec, state, reason, priority_rank, submit_seq,"
        " approved, parent_task_id, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    # Every ``submitted`` row, then the QUEUED ones' moves, in the tasks' order.
    t.events_many(
        [(r.id, "submitted", None, State.PENDING, "submitted", {"name": r.name}, now) for r in out]
        + [
            (r.id, "state", State.PENDING, State.QUEUED, queued_reason, None, now)
            for r in out
            if r.state is State.QUEUED
        ]
    )
    # In the tasks' order, so each task's rows keep its depends_on order (read by rowid).
    t.db.executemany("INSERT OR IGNORE INTO deps (task_id, depends_on) VALUES (?, ?)", deps)
    return out


def update(t: Tx, task_id: str, cols: dict[str, Any], now: float) -> None:
    """Change non-state columns (approval flag, retry time, totals)."""
    sets = ", ".join(f"{k} = ?" for k in cols)
    t.db.execute(
        f"UPDATE tasks SET {sets}, updated_at = ? WHERE id = ?", (*cols.values(), now, task_id)
    )


def get(t: Tx, task_id: str) -> TaskRecord | None:
    rows = t.all(f"SELECT {READ_COLS} FROM tasks WHERE id = ?", (task_id,))
    return from_row(rows[0], deps_of(t, task_id)) if rows else None


def deps_of(t: Tx, task_id: str) -> list[str]:
    rows = t.all("SELECT depends_on FROM deps WHERE task_id = ? ORDER BY rowid", (task_id,))
    return [r[0] for r in rows]


def select(t: Tx, states: Collection[State] | None) -> list[TaskRecord]:
    sql = f"SELECT {READ_COLS} FROM tasks"
    args: list[Any] = []
    if states:
        sql += f" WHERE state IN ({','.join('?' * len(states))})"
        args += [s.value for s in states]
    rows = t.all(sql, args)
    # Sorting here beats ORDER BY, which makes SQLite sort whole rows, specs and all.
    rows.sort(key=itemgetter(_SEQ))
    deps: dict[str, list[str]] = {}
    for tid, dep in t.all("SELECT task_id, depends_on FROM deps ORDER BY rowid"):
        deps.setdefault(tid, []).append(dep)
    return [from_row(r, deps.get(r[0], [])) for r in rows]


def ids(t: Tx) -> set[str]:
    return {r[0] for r in t.all("SELECT id FROM tasks")}


def matches(t: Tx, ref: str) -> dict[str, str]:
    """{id: name} of the tasks ``ref`` may mean: its own id, else by id prefix or name."""
    if t.all("SELECT id FROM tasks WHERE id = ?", (ref,)):
        return {ref: ""}
    rows = t.all("SELECT id, name FROM tasks WHERE id LIKE ? ESCAPE '\\'", (like_prefix(ref),))
    rows += t.all("SELECT id, name FROM tasks WHERE name = ?", (ref,))
    return {r[0]: r[1] for r in rows}


def _existing_ids(t: Tx, wanted: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in t.all(f"SELECT id FROM tasks WHERE id IN ({marks})", chunk))
    return found


_STATES = {s.value: s for s in State}
# Each state's text: a dict lookup (a StrEnum hashes as its text) costs a quarter of ``.value``.
VALUES: dict[State | str, str] = {s: s.value for s in State}


def from_row(row: tuple[Any, ...], deps: list[str]) -> TaskRecord:
    tid, name, spec, state, reason, approved, attempts, base, retry_at, cost, tin, tout = row[:12]
    rej, q, res, created, updated, seq = row[12:18]
    run_started, run_ended = row[18:20] if len(row) >= 20 else (None, None)
    run_node = row[20] or "" if len(row) >= 21 else ""
    summary = row[21] if len(row) >= 22 else None
    return TaskRecord(
        id=tid,
        name=name,
        spec=spec,  # parsed by TaskRecord.task when first needed
        state=_STATES[state],  # a dict lookup: State(value) costs 3 µs a row
        reason=reason,
        approved=bool(approved),
        attempts=attempts,
        attempt_base=base,
        retry_at=retry_at,
        cost_usd=cost,
        tokens_in=tin,
        tokens_out=tout,
        rejection_comment=rej,
        question_json=q,
        result=res,
        created_at=created,
        updated_at=updated,
        submit_seq=seq,
        run_node=run_node,
        summary=summary,
        depends_on=deps,
        run_started_at=run_started,
        run_ended_at=run_ended,
    )


def like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def set_summary(t: Tx, task_id: str, summary: str) -> None:
    """Keep a task's summary (JSON) for its dependents; the task's state is left alone."""
    t.db.execute("UPDATE tasks SET summary = ? WHERE id = ?", (summary, task_id))
