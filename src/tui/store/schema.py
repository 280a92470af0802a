"""Schema migrations. Each entry moves the database one version up; never edit a shipped one."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # v1: the first schema.
    """
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        spec TEXT NOT NULL,                -- the Task as written (JSON)
        state TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',   -- why it is in this state
        priority_rank INTEGER NOT NULL,
        submit_seq INTEGER NOT NULL,       -- FIFO order within a priority
        approved INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        attempt_base INTEGER NOT NULL DEFAULT 0,  -- attempts already used before a manual retry
        retry_at REAL,                     -- wall time when an automatic retry is due
        cost_usd REAL NOT NULL DEFAULT 0,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        rejection_comment TEXT NOT NULL DEFAULT '',
        question_json TEXT,
        result TEXT,
        parent_task_id TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX tasks_state ON tasks(state);
    CREATE TABLE deps (
        task_id TEXT NOT NULL REFERENCES tasks(id),
        depends_on TEXT NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    );
    CREATE INDEX deps_reverse ON deps(depends_on);
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks(id),
        attempt INTEGER NOT NULL,
        engine_id TEXT NOT NULL,
        pid INTEGER,
        pgid INTEGER,
        proc_start INTEGER,                -- /proc start time: tells a reused pid apart
        started_at REAL NOT NULL,
        ended_at REAL,
        exit_code INTEGER,
        outcome TEXT,
        error TEXT NOT NULL DEFAULT '',
        cost_usd REAL NOT NULL DEFAULT 0,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        session_id TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX runs_task ON runs(task_id);
    -- The journal: every state change and every other engine event, in commit order.
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        from_state TEXT,
        to_state TEXT,
        reason TEXT NOT NULL DEFAULT '',
        data TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX events_task ON events(task_id, id);
    CREATE VIEW transitions AS
        SELECT id, task_id, from_state, to_state, reason, at FROM events WHERE kind = 'state';
    CREATE TABLE output (
        id INTEGER PRIMARY KEY,            -- commit order across all tasks
        task_id TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        stream INTEGER NOT NULL,           -- 1 stdout, 2 stderr
        seq INTEGER NOT NULL,              -- line number within the run
        at REAL NOT NULL,
        text TEXT NOT NULL
    );
    -- A task's log is paged by (run, line number); no index on task_id keeps inserts fast.
    CREATE INDEX output_run ON output(run_id, seq);
    -- The agent CLI's own protocol lines, kept for debugging (`tui logs --raw`).
    CREATE TABLE raw_output (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        at REAL NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX raw_output_run ON raw_output(run_id, seq);
    CREATE TABLE questions (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        run_id INTEGER,
        kind TEXT NOT NULL,                -- question | approval | review
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'open',
        answer TEXT,
        created_at REAL NOT NULL,
        answered_at REAL
    );
    CREATE INDEX questions_open ON questions(status);
    -- Commands for the engine that owns this database, from other processes (CLI, viewers).
    CREATE TABLE commands (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL,
        done_at REAL,
        ok INTEGER,
        reply TEXT
    );
    -- Engines that have scheduled this database; a live one owns it.
    CREATE TABLE engines (
        id TEXT PRIMARY KEY,
        pid INTEGER NOT NULL,
        proc_start INTEGER,
        started_at REAL NOT NULL,
        stopped_at REAL
    );
    """,
    # v2: one output row per read chunk (see tui.store.chunks): `lines` lines joined by "\n",
    # numbered from `seq`, ids from `id`. Existing rows are one line each, so they stay valid.
    """
    ALTER TABLE output ADD COLUMN lines INTEGER NOT NULL DEFAULT 1;
    """,
    # v3: commands reach the engine over the socket of whoever owns the database, never
    # through a table; each engine records that socket, so a client with another
    # XDG_RUNTIME_DIR still finds it.
    """
    DROP TABLE commands;
    ALTER TABLE engines ADD COLUMN socket TEXT;
    """,
    # v4: a task's git worktree (issue 15): where its branch and checkout are, and the base
    # pinned when it was submitted. Tasks continuing another's branch share its branch and path.
    """
    CREATE TABLE worktrees (
        task_id TEXT PRIMARY KEY,
        repo TEXT NOT NULL,                -- the repository's top directory (git runs there)
        subdir TEXT NOT NULL DEFAULT '',   -- project_dir inside the repository
        base_ref TEXT NOT NULL,            -- as the task wrote it ('' = HEAD)
        base_sha TEXT NOT NULL,            -- the commit it resolved to at submit time
        base_branch TEXT NOT NULL DEFAULT '',  -- the branch a merge goes into ('' = none)
        branch TEXT NOT NULL,
        path TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'planned',  -- planned | active | merged | discarded
        created_at REAL NOT NULL
    );
    """,
    # v5: the node a run runs on (a Ray node id; empty for the local executor).
    """
    ALTER TABLE runs ADD COLUMN node TEXT NOT NULL DEFAULT '';
    """,
    # v6: the settings an engine of this database was told to run with (`tui daemon start
    # --concurrency 8`...), so a daemon a viewer starts again comes back with them.
    """
    CREATE TABLE engine_settings (
        name TEXT PRIMARY KEY,             -- concurrency, shell
        value TEXT NOT NULL,               -- JSON
        set_at REAL NOT NULL
    );
    """,
    # v7: a task's summary for its dependents' `context: {transfer: summary}` (issue 12), JSON:
    # {strategy, summary, size_before, size_after} (tui.engine.summaries).
    """
    ALTER TABLE tasks ADD COLUMN summary TEXT;
    """,
    # v8: how far into its agent's stdout and stderr a run's stored lines reach (bytes, at a
    # line's end), committed with those lines: the engine that adopts a run whose engine died
    # asks the keeper for the rest from there (docs/daemon.md, "Crash safety").
    """
    ALTER TABLE runs ADD COLUMN out_offset INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN err_offset INTEGER NOT NULL DEFAULT 0;
    """,
    # v9: every run's start asks whether anyone asked about its task (tui.store.runs.start):
    # an index lookup, not a scan of every question a long-lived daemon has kept.
    """
    CREATE INDEX questions_task ON questions(task_id);
    """,
    # v10: two indexes no reader needs, each written by every transition (store CPU: the DAG's
    # run phase, bench/README "Session 12"). tasks_state served only `tui ls --state`, which
    # reads every task anyway; events_task only a journal filtered by task, which the product
    # never asks for (viewers follow the journal by id). Keyed on a random task id, each
    # journal row dirtied a page of its own.
    """
    DROP INDEX tasks_state;
    DROP INDEX events_task;
    """,
]
