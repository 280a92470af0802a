"""A database's tasks as one portable JSON-lines file, and back (`tui export` / `tui import`).

The file: a header line, then one ``{"type": T, "row": {column: value}}`` line per row of
``tasks``, ``deps``, ``runs``, ``events``, ``questions``, ``output`` and ``raw_output`` (every
column the table has, so a column added later travels too), then an ``end`` line with the
count, so a file cut short is told from a whole one.

Import adds everything in one transaction: a bad line anywhere leaves the database as it
was. Task and question ids are kept, and one already in the database is an error naming it
(nothing is merged or renamed behind the user's back); row ids (runs, events, output) are
given anew, and references to runs follow them. A run's process (pid) is dropped: it belonged
to another machine or time. A run still open in the file stays open, so the next engine on the
importing database ends it as interrupted and queues its task again, as after a crash.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from tui.model.task import STORED, Task

FORMAT = "tui-export"
VERSION = 1
MAX_LINE = 32 << 20  # bytes in one line: an output chunk or a protocol line, with room
# Written in this order, so that a run exists before what refers to it.
KINDS = ("task", "dep", "run", "event", "question", "output", "raw_output")
TABLES = {
    "task": "tasks",
    "dep": "deps",
    "run": "runs",
    "event": "events",
    "question": "questions",
    "output": "output",
    "raw_output": "raw_output",
}
_NEW_ID = {"run", "event", "output", "raw_output"}  # integer ids given anew on import
_DROPPED = {"run": ("pid", "pgid", "proc_start")}  # meaningless in another database


class PortableError(ValueError):
    """What is wrong with an export file or a selection, saying what to do."""


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def select_ids(db: sqlite3.Connection, roots: list[str] | None) -> list[str]:
    """Every task (``roots`` None), or the roots with all connected to them: dependencies,
    dependents, parents and children, transitively — the whole pipeline they belong to."""
    if roots is None:
        return [r[0] for r in db.execute("SELECT id FROM tasks ORDER BY submit_seq")]
    edges: dict[str, set[str]] = {}

    def link(a: str, b: str) -> None:
        if a and b:
            edges.setdefault(a, set()).add(b)
            edges.setdefault(b, set()).add(a)

    for a, b in db.execute("SELECT task_id, depends_on FROM deps"):
        link(a, b)
    for a, b in db.execute("SELECT id, parent_task_id FROM tasks WHERE parent_task_id != ''"):
        link(a, b)
    seen, todo = set(roots), list(roots)
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    order = db.execute("SELECT id FROM tasks ORDER BY submit_seq")
    return [r[0] for r in order if r[0] in seen]


def export_rows(db: sqlite3.Connection, task_ids: list[str]) -> Iterator[dict[str, Any]]:
    """The records of ``task_ids``, read in one transaction (a consistent snapshot)."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS export_ids (id TEXT PRIMARY KEY)")
    db.execute("DELETE FROM export_ids")
    db.executemany("INSERT OR IGNORE INTO export_ids VALUES (?)", ((i,) for i in task_ids))
    key = {"task": "id", "dep": "task_id"}
    for kind in KINDS:
        table = TABLES[kind]
        cols = _columns(db, table)
        col = key.get(kind, "task_id")
        order = "submit_seq" if kind == "task" else "rowid"
        sql = (
            f"SELECT {', '.join(cols)} FROM {table} WHERE {col} IN (SELECT id FROM export_ids)"
            f" ORDER BY {order}"
        )
        for row in db.execute(sql):
            yield {"type": kind, "row": dict(zip(cols, row, strict=True))}


def write_export(
    db: sqlite3.Connection, task_ids: list[str], out: IO[str], selection: str
) -> dict[str, int]:
    """Write the file; returns how many records of each kind."""
    counts = dict.fromkeys(KINDS, 0)
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": time.time(),
        "selection": selection,
    }
    out.write(json.dumps(header) + "\n")
    db.execute("BEGIN")
    try:
        for record in export_rows(db, task_ids):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            counts[record["type"]] += 1
    finally:
        db.execute("COMMIT")
    out.write(json.dumps({"type": "end", "records": sum(counts.values())}) + "\n")
    return counts


def read_records(src: IO[bytes], name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every line after the header, bounded: a line past
    ``MAX_LINE`` bytes, a line that is not a JSON object, or a file without its end line
    raise PortableError naming the line."""
    number = 0
    ended = False
    total = 0
    while True:
        raw = src.readline(MAX_LINE + 1)
        if not raw:
            break
        number += 1
        if len(raw) > MAX_LINE:
            raise PortableError(
                f"{name}:{number}: line longer than {MAX_LINE >> 20} MB: not a tui export file"
            )
        if ended:
            if raw.strip():
                raise PortableError(f"{name}:{number}: text after the end line")
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            msg = getattr(e, "msg", str(e))
            raise PortableError(f"{name}:{number}: not JSON ({msg})") from None
        if not isinstance(record, dict):
            raise PortableError(f"{name}:{number}: expected a JSON object")
        if number == 1:
            if record.get("type") != "header" or record.get("format") != FORMAT:
                raise PortableError(
                    f"{name}:1: not a tui export file (write one with `tui export`)"
                )
            if record.get("version") != VERSION:
                raise PortableError(
                    f"{name}:1: export format version {record.get('version')!r}; this tui "
                    f"reads version {VERSION}"
                )
            continue
        if record.get("type") == "end":
            if record.get("records") != total:
                raise PortableError(
                    f"{name}:{number}: the end line counts {record.get('records')!r} records, "
                    f"the file holds {total}"
                )
            ended = True
            continue
        total += 1
        yield number, record
    if number == 0:
        raise PortableError(f"{name}: the file is empty")
    if not ended:
        raise PortableError(
            f"{name}: no end line after line {number}: the file was cut short; export it again"
        )


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def import_records(
    db: sqlite3.Connection,
    records: Iterator[tuple[int, dict[str, Any]]],
    name: str,
    warn: Callable[[str], None],
) -> dict[str, int]:
    """Insert the records in one transaction (rolled back on any error); their counts."""
    counts = dict.fromkeys(KINDS, 0)
    columns = {kind: set(_columns(db, TABLES[kind])) for kind in KINDS}
    runs: dict[int, int] = {}  # run id in the file -> run id here
    conflicts: list[str] = []
    unknown_cols: set[tuple[str, str]] = set()
    db.execute("BEGIN IMMEDIATE")
    try:
        (seq,) = db.execute("SELECT COALESCE(MAX(submit_seq), 0) FROM tasks").fetchone()
        for number, record in records:
            kind, row = record.get("type"), record.get("row")
            where = f"{name}:{number}"
            if kind not in TABLES:
                raise PortableError(f"{where}: unknown record type {kind!r}")
            if not isinstance(row, dict) or not all(_scalar(v) for v in row.values()):
                raise PortableError(f"{where}: a {kind} record needs a row of plain values")
            row = dict(row)
            for col in [c for c in row if c not in columns[kind]]:
                unknown_cols.add((TABLES[kind], col))
                del row[col]
            for col in _DROPPED.get(kind, ()):
                row.pop(col, None)
            old_id = row.pop("id", None) if kind in _NEW_ID else None
            if kind == "task":
                conflict = _check_task(db, row, where)
                if conflict:
                    conflicts.append(conflict)
                    continue
                seq += 1
                row["submit_seq"] = seq
            elif (
                kind == "question"
                and db.execute("SELECT 1 FROM questions WHERE id = ?", (row.get("id"),)).fetchone()
            ):
                conflicts.append(f"question {row.get('id')}")
                continue
            if conflicts:
                continue  # keep looking for every conflict, insert nothing more
            if "run_id" in row and row["run_id"] is not None:
                if row["run_id"] not in runs:
                    if kind == "question":
                        row["run_id"] = None  # its run was not exported: the question stays
                    else:
                        missing = row["run_id"]
                        raise PortableError(f"{where}: refers to run {missing!r}, not in the file")
                else:
                    row["run_id"] = runs[row["run_id"]]
            cols = list(row)
            try:
                cur = db.execute(
                    f"INSERT INTO {TABLES[kind]} ({', '.join(cols)})"
                    f" VALUES ({', '.join('?' * len(cols))})",
                    [row[c] for c in cols],
                )
            except sqlite3.IntegrityError as e:
                raise PortableError(f"{where}: cannot store this {kind}: {e}") from None
            if kind == "run" and isinstance(old_id, int):
                runs[old_id] = int(cur.lastrowid or 0)
            counts[kind] += 1
        if conflicts:
            shown = ", ".join(conflicts[:10]) + (" …" if len(conflicts) > 10 else "")
            raise PortableError(
                f"{len(conflicts)} id(s) of {name} are already in this database ({shown}): "
                "nothing was imported. Import into another database (--db PATH), or export "
                "again only what is not here yet"
            )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    for table, col in sorted(unknown_cols):
        warn(f"column {table}.{col} is not in this database; its values were left out")
    return counts


def _check_task(db: sqlite3.Connection, row: dict[str, Any], where: str) -> str:
    """ "" if the task may be stored; the conflict's text if its id is taken here."""
    spec, task_id = row.get("spec"), row.get("id")
    if not isinstance(task_id, str) or not isinstance(spec, str):
        raise PortableError(f"{where}: a task needs an id and a spec")
    try:
        Task.model_validate_json(spec, context=STORED)
    except ValueError as e:
        first = str(e).splitlines()[1:2] or [str(e)]
        raise PortableError(f"{where}: task {task_id}'s spec is not a task: {first[0]}") from None
    if db.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone():
        return f"task {task_id}"
    return ""
