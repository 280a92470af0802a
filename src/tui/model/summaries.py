"""The summariser tasks of ``context: {transfer: summary}`` with an agent strategy (issue 12).

For each upstream task U whose result a task T takes as a summary, the loader adds a task
``summarize:U`` (an ordinary task: queued, run, retried and costed like any, shown in the
list) that depends on U, gets U's result through ``context: {from: [U]}`` and answers with
the JSON object {summary, key_outputs, decisions, errors}; T then depends on it too. The
engine (tui.engine.summaries) puts that object in T's context instead of U's result.
Made at load time, inside the one submit transaction: a crash never leaves half of it.

Compaction (``summarizer.compaction``) works the same way for a task that takes U's result
whole (``transfer: full``): a task ``compact:U`` (tag ``compaction``) that the engine runs
only when its trigger says (tui.engine.dispatch), else skips; when it ran, T gets its answer
in place of U's long result.
"""

from __future__ import annotations

from tui.model.task import AgentConfig, Task
from tui.model.workflow import AGENT_STRATEGIES, ContextSpec, Strategy, Summarizer, Transfer

SUMMARY_SCHEMA = {
    "type": "object",
    "required": ["summary"],
    "properties": {
        "summary": {"type": "string"},
        "key_outputs": {"type": "array", "items": {"type": "string"}},
        "decisions": {"type": "array", "items": {"type": "string"}},
        "errors": {"type": "array", "items": {"type": "string"}},
    },
}

_ANSWER = (
    "Answer with one JSON object and nothing else: "
    '{"summary": "...", "key_outputs": ["..."], "decisions": ["..."], "errors": ["..."]}.'
)
PROMPTS = {
    Strategy.MODERATE: (
        "Summarise the upstream task's result above for the task that comes next: in "
        "`summary` two or three sentences; in `key_outputs` what it produced (files, values, "
        "findings); in `decisions` what it chose and why in a few words; in `errors` what "
        "went wrong. Leave out its reasoning. " + _ANSWER
    ),
    Strategy.COMPREHENSIVE: (
        "Summarise the upstream task's result above for the task that comes next, keeping "
        "its reasoning compressed: in `summary` a paragraph with how it got there; in "
        "`key_outputs` everything it produced; in `decisions` each choice with its reason; "
        "in `errors` every error and what it meant. " + _ANSWER
    ),
}


def uses_agent(task: Task) -> bool:
    spec = task.context
    return (
        spec is not None
        and spec.transfer == Transfer.SUMMARY
        and task.summarizer is not None
        and task.summarizer.strategy in AGENT_STRATEGIES
    )


def uses_compaction(task: Task) -> bool:
    spec = task.context
    return (
        spec is not None
        and spec.transfer == Transfer.FULL
        and "outputs" in spec.preserve
        and task.summarizer is not None
        and task.summarizer.compaction is not None
        and not (task.summarizes or task.compacts)  # never a summariser's own input
    )


def summarizer_task(
    upstream: Task | str, spec: Summarizer, like: Task, compaction: bool = False
) -> Task:
    """The task summarising ``upstream`` (a task of this batch, or an id already stored),
    or, with ``compaction``, compacting its result when the trigger says so."""
    up_id = upstream if isinstance(upstream, str) else upstream.id
    up_name = upstream if isinstance(upstream, str) else upstream.name
    # `aggressive` needs no agent for a summary; compacting always runs one (moderate's prompt).
    strategy = spec.strategy if spec.strategy in AGENT_STRATEGIES else Strategy.MODERATE
    agent = AgentConfig(
        type=spec.agent,
        model=spec.model,
        instructions=spec.prompt or PROMPTS[strategy],
        project_dir=like.agent.project_dir,
        # It only reads and answers: no plan to approve first (claude plans by default).
        skip_planning=spec.agent == "claude",
    )
    if compaction:
        assert spec.compaction is not None
        made = {
            "name": f"compact:{up_name}",
            "description": f"compacts the result of {up_name} "
            f"({spec.compaction.describe()}) for its dependents",
            "tags": ["compaction"],
            "compacts": up_id,
            "summarizer": spec.model_dump(),  # the trigger the engine reads
        }
    else:
        made = {
            "name": f"summarize:{up_name}",
            "description": f"{spec.strategy.value} summary of {up_name} for its dependents",
            "tags": ["summary"],
            "summarizes": up_id,
        }
    return Task.model_validate(
        {
            **made,
            "agent": agent.model_dump(),
            "depends_on": [up_id],
            "context": ContextSpec(from_=[up_id]).model_dump(),
            "output_format": {"type": "json", "schema": SUMMARY_SCHEMA},
            # It reads a result and answers: no checkout, whatever config.toml's `worktree`.
            "worktree": None,
        }
    )


def add_summarizers(tasks: list[Task]) -> list[Task]:
    """``tasks`` with a summariser task before each task that needs one (one per upstream
    task, shared by its dependents), the dependent made to depend on it."""
    by_id = {t.id: t for t in tasks}
    # (upstream id, compaction?) -> its summariser task
    made: dict[tuple[str, bool], Task] = {}
    out: list[Task] = []
    for task in tasks:
        compaction = uses_compaction(task)
        if uses_agent(task) or compaction:
            assert task.context is not None and task.summarizer is not None
            for up_id in _upstream_ids(task, by_id):
                key = (up_id, compaction)
                if key not in made:
                    up = by_id.get(up_id, up_id)
                    made[key] = summarizer_task(up, task.summarizer, task, compaction)
                    out.append(made[key])
                if made[key].id not in task.depends_on:
                    task.depends_on.append(made[key].id)
        out.append(task)
    return out


def _upstream_ids(task: Task, by_id: dict[str, Task]) -> list[str]:
    """The ids (depends_on holds ids once loaded) of the dependencies ``context.from`` names."""
    assert task.context is not None
    if task.context.from_ == "all":  # never the classifier task that picks its agent
        return [d for d in task.depends_on if d != task.classify_by]
    wanted = set(task.context.from_)
    return [d for d in task.depends_on if d in wanted or (d in by_id and by_id[d].name in wanted)]
