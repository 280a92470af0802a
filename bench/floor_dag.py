"""A floor for bench_dag's DAG: the least a Python runner does with tui's durable journal.

    python bench/floor_dag.py DB [N [CONCURRENCY]]

One process, one sqlite3 connection (WAL, synchronous=NORMAL, as tui), os.posix_spawn of
/usr/bin/true with its stdout/stderr on pipes read to the end, pidfds in a selector; the rows
tui writes for each transition (the task's state, a run row, a journal row), every start
committed before its spawn, a line printed per task's end. What it leaves out is what tui's
architecture adds: the keeper (agents that outlive the engine), the store's thread, adapters
and coroutines per run, events to viewers, pydantic models and validation at launch. The gap
between this row and tui's in bench_dag.py is the cost of that architecture, not of the work.
"""

from __future__ import annotations

import os
import selectors
import sqlite3
import sys
import time

N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
CONC = int(sys.argv[3]) if len(sys.argv) > 3 else 8
EVENT = "INSERT INTO events (task_id, kind, from_state, to_state, reason, at) VALUES (?,?,?,?,?,?)"
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = NORMAL")
db.executescript("""
CREATE TABLE tasks (id TEXT PRIMARY KEY, name TEXT, spec TEXT, state TEXT, reason TEXT,
  attempts INTEGER DEFAULT 0, created_at REAL, updated_at REAL, cost_usd REAL DEFAULT 0);
CREATE INDEX tasks_state ON tasks(state);
CREATE TABLE deps (task_id TEXT, depends_on TEXT, PRIMARY KEY (task_id, depends_on));
CREATE INDEX deps_reverse ON deps(depends_on);
CREATE TABLE runs (id INTEGER PRIMARY KEY, task_id TEXT, attempt INTEGER, started_at REAL,
  ended_at REAL, pid INTEGER, exit_code INTEGER, outcome TEXT);
CREATE INDEX runs_task ON runs(task_id);
CREATE TABLE events (id INTEGER PRIMARY KEY, task_id TEXT, kind TEXT, from_state TEXT,
  to_state TEXT, reason TEXT, data TEXT, at REAL);
CREATE INDEX events_task ON events(task_id);
""")
t0 = time.time()
names = [f"t{i:03d}" for i in range(N)]
spec = '{"agent": {"type": "shell", "instructions": "true"}}'
db.execute("BEGIN IMMEDIATE")
now = time.time()
for n in [*names, "all"]:
    db.execute(
        "INSERT INTO tasks (id, name, spec, state, created_at, updated_at) VALUES (?,?,?,?,?,?)",
        (n, n, spec, "QUEUED" if n != "all" else "PENDING", now, now),
    )
    db.execute(
        EVENT,
        (n, "submitted", None, "PENDING", "", now),
    )
    if n != "all":
        db.execute(
            EVENT,
            (n, "state", "PENDING", "QUEUED", "dependencies met", now),
        )
db.executemany("INSERT INTO deps VALUES (?, ?)", [("all", n) for n in names])
db.execute("COMMIT")

queue = list(reversed(names))
open_deps = N
sel = selectors.DefaultSelector()
running: dict[int, tuple[str, int, int, int, int]] = {}  # pidfd -> (task, run, pid, out, err)
env = dict(os.environ)
devnull = os.open(os.devnull, os.O_RDONLY)


def start(batch: list[str]) -> None:
    now = time.time()
    rows = []
    db.execute("BEGIN IMMEDIATE")
    for t in batch:
        db.execute(
            "UPDATE tasks SET attempts = attempts + 1, state = 'RUNNING', updated_at = ?"
            " WHERE id = ? AND state = 'QUEUED'",
            (now, t),
        )
        run = db.execute(
            "INSERT INTO runs (task_id, attempt, started_at) VALUES (?,?,?) RETURNING id",
            (t, 1, now),
        ).fetchone()[0]
        db.execute(
            EVENT,
            (t, "state", "QUEUED", "RUNNING", "attempt 1", now),
        )
        rows.append((t, run))
    db.execute("COMMIT")
    for t, run in rows:
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        pid = os.posix_spawn(
            "/usr/bin/true",
            ["true"],
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
            ],
            setsid=True,
        )
        os.close(out_w)
        os.close(err_w)
        fd = os.pidfd_open(pid)
        running[fd] = (t, run, pid, out_r, err_r)
        sel.register(fd, selectors.EVENT_READ)


def ended(fds: list[int]) -> None:
    global open_deps
    now = time.time()
    db.execute("BEGIN IMMEDIATE")
    for fd in fds:
        t, run, pid, out_r, err_r = running.pop(fd)
        sel.unregister(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        for p in (out_r, err_r):
            while os.read(p, 65536):
                pass
            os.close(p)
        os.close(fd)
        db.execute(
            "UPDATE runs SET ended_at = ?, outcome = ?, exit_code = ? WHERE id = ?",
            (now, "COMPLETED", code, run),
        )
        db.execute(
            "UPDATE tasks SET state = 'COMPLETED', reason = 'exit code 0', updated_at = ?"
            " WHERE id = ? AND state = 'RUNNING'",
            (now, t),
        )
        db.execute(
            EVENT,
            (t, "state", "RUNNING", "COMPLETED", "exit code 0", now),
        )
        print(f"{time.strftime('%H:%M:%S')} {t:<28} running → done         exit code {code}")
        if t != "all":
            open_deps -= 1
            if open_deps == 0:
                db.execute(
                    "UPDATE tasks SET state = 'QUEUED', updated_at = ? WHERE id = 'all'", (now,)
                )
                db.execute(
                    EVENT,
                    ("all", "state", "PENDING", "QUEUED", "dependencies met", now),
                )
                queue.append("all")
    db.execute("COMMIT")


start([queue.pop() for _ in range(min(CONC, len(queue)))])
while running:
    fds = [key.fd for key, _ in sel.select()]
    ended(fds)
    free = CONC - len(running)
    if queue and free:
        start([queue.pop() for _ in range(min(free, len(queue)))])
print(f"{N + 1} tasks done in {time.time() - t0:.3f} s", file=sys.stderr)
