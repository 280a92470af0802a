"""A task's own system prompt: ``system:`` parts (text, or parts named in config) and the
``<current_task_context>`` block with its variables, added to ``agent.system_prompt_append``.

Every agent CLI gets them the way it takes ``system_prompt_append`` (claude's
``--append-system-prompt``; gemini and codex: leading the first prompt), because
``with_system`` folds them into that one field of the agent the adapter is handed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tui.model.agent_kinds import KINDS
from tui.model.task import AgentConfig, Task
from tui.model.variables import resolve

# A part written as one such word is a name from config ([contexts.NAME]); anything else
# (more than one word, punctuation) is the text itself.
PART_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
CONTEXT_TAG = "current_task_context"


def is_part_name(item: str) -> bool:
    return PART_NAME.fullmatch(item) is not None


def takes_system(agent_type: str) -> bool:
    """Only agent CLIs have a system prompt; a shell or Taskfile task has none."""
    kind = KINDS.get(agent_type)
    return kind is None or bool(kind.cli)


def context_block(task: Task) -> str:
    """The task's variables as the agent sees them; "" when it has none."""
    if not task.variables and not task.vars:
        return ""
    # Imported here: xml.sax pulls in urllib and http (~6 ms of every `tui run`'s start).
    from xml.sax.saxutils import escape

    values, _ = resolve(task.variables, task.vars)  # checked at load; extras are left out
    lines = [f"task: {escape(task.name)}"]
    lines += [f"{name}: {escape(value)}" for name, value in values.items()]
    body = "\n".join(lines)
    return f"<{CONTEXT_TAG}>\n{body}\n</{CONTEXT_TAG}>"


def system_text(task: Task) -> str:
    """What the task adds to its agent's system prompt, parts first, in order."""
    parts = [*task.system, task.agent.system_prompt_append, context_block(task)]
    return "\n\n".join(p.strip() for p in parts if p.strip())


def with_system(task: Task) -> AgentConfig:
    """The task's agent with its system parts and context block in system_prompt_append."""
    text = system_text(task)
    if text == task.agent.system_prompt_append:
        return task.agent
    return task.agent.model_copy(update={"system_prompt_append": text})


def resolve_parts(items: list[str], parts: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(the items with each name replaced by its part's text, names not in ``parts``)."""
    out, unknown = [], []
    for item in items:
        if is_part_name(item):
            if item in parts:
                out.append(parts[item])
            else:
                unknown.append(item)
        else:
            out.append(item)
    return out, unknown
