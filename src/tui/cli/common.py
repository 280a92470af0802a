"""Helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import shlex
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.model.states import label

if TYPE_CHECKING:  # the store and models are imported by the commands that use them
    from tui.config.schema import Settings
    from tui.engine.runner import Executor
    from tui.engine.settings import EngineSettings
    from tui.store.db import Store
    from tui.store.records import EventRecord


def db_path(db: str | None) -> Path:
    """The database a command works on: --db, $TUI_DB, the config's, the default."""
    from tui.store.paths import default_db_path

    return default_db_path(db, lambda: _settings().database)


@asynccontextmanager
async def open_store(db: str | None, *, create: bool = True) -> AsyncIterator[Store]:
    """Read-only commands pass ``create=False``: a missing database is an error, not a new
    empty file (which would hide where the real one is)."""
    from tui.store.db import Store

    store = await Store.open(db_path(db), create=create)
    try:
        yield store
    finally:
        await store.close()


def _settings() -> Settings:
    # Imported on use: a task's `tui ask` (which has $TUI_DB) never needs the config.
    from tui.config.load import settings_or_raise

    return settings_or_raise()


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The engine settings given on this command line (None: not given)."""
    return {"concurrency": args.concurrency or None, "shell": args.shell or None}


def config_settings() -> EngineSettings:
    """The engine settings of the config, else the built-in defaults."""
    from tui.config.schema import DEFAULT_CONCURRENCY, DEFAULT_SHELL
    from tui.engine.settings import EngineSettings

    settings = _settings()
    return EngineSettings(
        settings.concurrency or DEFAULT_CONCURRENCY, settings.shell or DEFAULT_SHELL
    )


async def engine_settings(store: Store, args: argparse.Namespace) -> EngineSettings:
    """The settings an engine this command starts on ``store`` runs with: the flag (stored
    for the next engine on the database), else the stored one, else the config, else the
    built-in (tui.engine.settings). Says so when a flag replaces a stored value."""
    from tui.engine.settings import settle_stored

    chosen, notes = await settle_stored(store, given_settings(args), config_settings())
    for note in notes:
        err(note)
    return chosen


def settings_notes(db: Path, args: argparse.Namespace) -> list[str]:
    """What a daemon started for ``db`` with these flags will replace (told before it starts,
    since it tells only its log)."""
    from tui.engine.settings import settle
    from tui.store.db import stored_settings

    return settle(given_settings(args), stored_settings(db), config_settings(), str(db)).notes


def engine_executor(args: argparse.Namespace) -> Executor | None:
    """The executor ``--executor`` (else [executor] in the config) asks for; None = local."""
    from tui.config.executor import executor_settings, make_executor

    return make_executor(executor_settings(getattr(args, "executor", None)))


DAEMON_SETTINGS = "to change them: `tui daemon stop`, then `tui daemon start` with them"


def ignored_settings(
    args: argparse.Namespace, engine: str, change: str = DAEMON_SETTINGS
) -> str | None:
    """What to tell the user when --concurrency / --shell were given but cannot apply, because
    ``engine`` (another process's) already schedules the database; None when none were."""
    names = ("concurrency", "shell", "executor")
    given = [f"--{name}" for name in names if getattr(args, name, None)]
    if not given:
        return None
    verb = "applies" if len(given) == 1 else "apply"
    return (
        f"{' and '.join(given)} only {verb} to an engine this command starts; {engine} "
        f"keeps its own ({change})"
    )


_stamped: tuple[int, str] = (-1, "")


def _stamp(at: float) -> str:
    """``HH:MM:SS`` of ``at``, formatted once a second (a burst of transitions shares it)."""
    global _stamped
    second = int(at)  # what localtime(at) shows: it drops the fraction too
    if _stamped[0] != second:
        _stamped = (second, time.strftime("%H:%M:%S", time.localtime(second)))
    return _stamped[1]


def print_transition(ev: EventRecord, name: str, as_json: bool) -> None:
    if as_json:
        line = json.dumps(
            {
                "at": ev.at,
                "task_id": ev.task_id,
                "name": name,
                "from": ev.from_state,
                "to": ev.to_state,
                "reason": ev.reason,
            }
        )
    else:
        # Every part is made printable here (the column's texts once each: a run's names,
        # states and reasons repeat), so the line is not checked again as a whole.
        line = f"{_stamp(ev.at)} {_name_column(name)} {_moved(ev.from_state, ev.to_state)}"
        if ev.reason:
            line += _reason(ev.reason)
    _lines.add(line, shown=True)


@functools.lru_cache(maxsize=4096)
def _name_column(name: str) -> str:
    return f"{one_line(name):<24}"


@functools.lru_cache(maxsize=256)
def _moved(frm: str | None, to: str | None) -> str:
    # The list's words ("running → done"), 11 cells: "over budget", the longest.
    return f"{label(frm) if frm else 'new':>11} → {label(to) if to else '':<11}"


@functools.lru_cache(maxsize=256)
def _reason(reason: str) -> str:
    return f"  {one_line(reason)}"


def print_hook_failure(ev: EventRecord, name: str) -> None:
    """``12:00:01 build  hook on_complete failed: exit code 7: <its last stderr line>``."""
    stamp = _stamp(ev.at)
    said = str(ev.data.get("stderr") or "").strip().splitlines()[-1:]
    tail = f": {said[0]}" if said else ""
    hook, error = ev.data.get("hook"), ev.data.get("error")
    _lines.add(f"{stamp} {one_line(name):<24} hook {hook} failed: {error}{tail}")


# What the printed `tui answer` commands add so that they reach this database from another
# shell (set by `tui run` when the database is not the one a plain command would find).
_answer_db = ""


def answer_on(db: str | None) -> None:
    global _answer_db
    _answer_db = f" --db {shell_word(str(db_path(db)))}" if db or os.environ.get("TUI_DB") else ""


def shell_word(text: str) -> str:
    """``text`` as one word of a command a person copies from one printed line: shlex.quote,
    unless it holds a newline or another control character (shlex.quote keeps those, so the
    command would break across lines, or reach the terminal raw): then bash's and zsh's
    ``$'...'``, every such character escaped."""
    if not _CONTROL.search(text) and "\n" not in text and "\t" not in text:
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(c) for c in text) + "'"


def _ansi_c(c: str) -> str:
    if c in "\\'":
        return "\\" + c
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if _CONTROL.match(c):  # \u: a C1 character is a character, not the byte \x9b would be
        return f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}"
    return c


def print_question(ev: EventRecord, name: str) -> None:
    """A question a task raised (a ``question`` journal event), and the command that answers
    it: someone watching `tui run` can answer from another shell without looking it up."""
    data = ev.data
    ref = str(data.get("question_id", ""))[:8]
    kind = data.get("kind", "question")
    payload = data.get("payload") or {}
    stamp = _stamp(ev.at)
    if kind == "review":
        _lines.add(f"{stamp} {one_line(name):<24} waits for review")
        task = shell_word(name)
        _lines.add(
            f"    accept: tui accept{_answer_db} {task}   "
            f"reject: tui reject{_answer_db} {task} --comment TEXT"
        )
        return
    if kind == "approval":
        what = f"{payload.get('tool', 'a tool')}: {payload.get('summary', '')}".rstrip(": ")
        _lines.add(f"{stamp} {one_line(name):<24} asks to run {one_line(what)}")
        _lines.add(
            f"    allow: tui answer{_answer_db} {ref}   "
            f"deny: tui answer{_answer_db} {ref} --deny MESSAGE"
        )
        return
    items = payload.get("questions") or [{}]
    for item in items:
        _lines.add(f"{stamp} {one_line(name):<24} asks: {one_line(item.get('question', ''))}")
        options = [one_line(o.get("label", "")) for o in item.get("options", [])]
        if options:
            listed = "  ".join(f"{i}. {label}" for i, label in enumerate(options, start=1))
            _lines.add(f"    {listed}")
    answers = " ".join("ANSWER" for _ in items)
    _lines.add(
        f"    answer: tui answer{_answer_db} {ref} {answers}  (option numbers or labels, or text)"
    )


# Control characters but newline and tab: C0, DEL and C1 (0x9b alone starts a CSI sequence).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text from a task file or an agent (a name, a reason, a question) as a terminal may be
    sent it: an escape sequence could retitle, recolour or rewrite the screen, so each
    control character is shown escaped (``\\x1b``) instead."""
    if text.isprintable() or not _CONTROL.search(text):  # isprintable: a few times cheaper
        return text
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


_LINE_BREAKS = re.compile(r"[\n\t]")


def one_line(text: str) -> str:
    """``printable``, and newlines and tabs escaped too: a field in a column (a task's name,
    a reason) that must not break the line or the columns after it."""
    text = printable(text)
    return (
        _LINE_BREAKS.sub(lambda m: repr(m.group())[1:-1], text)
        if "\n" in text or "\t" in text
        else text
    )


# How long a printed line may wait for others to share its write: far below what a person
# watching notices, yet a busy run writes tens of times a second instead of once per loop turn.
FLUSH_DELAY = 0.02


class _LineBatch:
    """stdout lines written together: a burst of transitions is one write, each line out
    within FLUSH_DELAY (a person watching sees it at once). Whatever is held is written
    before a message to stderr (``err``), and when the command ends (``tui.cli.main``)."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def add(self, line: str, *, shown: bool = False) -> None:
        """``line`` to write; ``shown``: it is printable already (made so part by part)."""
        if not shown:
            line = printable(line)
        if not self._lines:
            try:
                asyncio.get_running_loop().call_later(FLUSH_DELAY, self.flush)
            except RuntimeError:  # no loop: write it now
                print(line, flush=True)
                return
        self._lines.append(line)

    def flush(self) -> None:
        if self._lines:
            text = "\n".join(self._lines) + "\n"
            self._lines.clear()
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:  # `tui run --json | head`: the run goes on, unprinted
                discard_stdout()


def discard_stdout() -> None:
    """The reader of stdout has gone (`| head`): send what is left nowhere, so neither a
    later write nor the interpreter's flush at exit raises (and prints a traceback)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


_lines = _LineBatch()
flush_transitions = _lines.flush


def err(message: str) -> None:
    _lines.flush()  # what happened before the message is printed before it
    print(f"tui: {message}", file=sys.stderr)
