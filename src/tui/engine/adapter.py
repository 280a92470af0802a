"""The contract between the engine and one agent CLI adapter, and the adapters by agent.type.

The engine owns this contract; adapters (tui.agents) implement it. The engine never imports an
adapter: whoever makes an Engine passes ``adapters``, or gets ``declared_adapters()``, which
imports the module each agent kind declares (tui.model.agent_kinds) the first time a task of
that kind runs, so a run of shell tasks does not pay for loading the claude, gemini and codex
protocols (and the MCP glue).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tui.model.agent_kinds import KINDS
from tui.model.states import State
from tui.model.task import Task
from tui.procs.process import Child, Spawner
from tui.store.records import QuestionRecord, RunRecord


@dataclass
class RunResult:
    """How one attempt ended, as the adapter saw it. The engine decides the task state."""

    outcome: State  # COMPLETED, FAILED, BUDGET_EXCEEDED, or READY (review gate)
    exit_code: int | None = None
    error: str = ""
    cost_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    session_id: str = ""
    result: str | None = None


class RunContext(Protocol):
    """What the engine hands an adapter for one attempt."""

    task: Task
    run_id: int
    attempt: int
    env: dict[str, str]
    shell: str
    rejection_comment: str  # set when a reviewer sent the last result back
    cost_so_far: float  # USD spent by earlier runs of this task
    previous_runs: list[RunRecord]  # earlier attempts, oldest first (session ids, outcomes)
    late_answers: list[QuestionRecord]  # answered after the run that asked had ended

    @property
    def inbox(self) -> asyncio.Queue[tuple[str, asyncio.Future[bool]]]:
        """A person's messages while the agent runs (agent kinds with ``messages``): the
        text, and a future to set to whether it reached the agent."""
        ...

    # Starts the agent's process (tui.procs.process.spawn, or the engine's keeper).
    spawner: Spawner

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Wait (task READY) for a person: kind is question | approval. None = expired."""

    async def output(self, stream: int, lines: list[str], end: int | None = None) -> None:
        """Record lines of stdout (1), stderr (2), or RAW (3): protocol lines kept apart for
        `tui logs --raw`. May wait when the writer is behind. ``end``: the byte offset in the
        agent's stream where these lines end (a plain command's, for adoption)."""

    async def process_started(self, proc: Child) -> None:
        """Report the agent's process group so the engine can time it out, cancel and recover."""

    async def session_started(self, session_id: str) -> None:
        """Report the agent's session id as soon as it is known (repeats are cheap), so a retry
        after the engine itself died can still resume it."""


class Adapter(Protocol):
    type: str

    async def run(self, ctx: RunContext) -> RunResult: ...


class Adoptive(Protocol):
    """An adapter whose runs can outlive the engine (its agent needs nothing of the engine
    while it runs: a plain command). The keeper keeps such an agent when the engine dies, and
    the next engine carries the run on with :meth:`adopt` (tui.engine.adoption)."""

    async def adopt(
        self, ctx: RunContext, proc: Child, offsets: tuple[int, int], tail: list[str]
    ) -> RunResult:
        """Carry on an agent a dead engine started: its output from ``offsets`` (stdout,
        stderr bytes already stored) on, ``tail`` its last stored stdout lines (for the
        result). As ``Adapter.run`` from there."""
        ...


def adoptive(adapter: Adapter | None) -> Adoptive | None:
    """``adapter`` if its runs can be adopted."""
    return adapter if callable(getattr(adapter, "adopt", None)) else None  # type: ignore[return-value]


class AdapterError(Exception):
    """The task cannot start (missing file, bad directory...). Shown to the user as is."""


class LazyAdapters(Mapping[str, "Adapter"]):
    """Adapters by agent.type from ``"module:Class"`` paths, each made when first asked for."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)
        self._made: dict[str, Adapter] = {}

    def __getitem__(self, agent_type: str) -> Adapter:
        adapter = self._made.get(agent_type)
        if adapter is None:
            module, _, name = self._paths[agent_type].partition(":")
            adapter = getattr(importlib.import_module(module), name)()
            self._made[agent_type] = adapter
        return adapter

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def declared_adapters() -> Mapping[str, Adapter]:
    """One adapter for every declared agent kind (see the module docstring)."""
    return LazyAdapters({k.name: k.adapter for k in KINDS.values()})
