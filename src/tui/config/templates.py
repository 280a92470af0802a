"""Runnable templates by name, and turning one into a Task.

``TemplateSource`` (tui.config.template_types) is the seam for every kind of template: the
config's [tasks.NAME] tables are one source (``ConfigTemplates``); the project's Taskfile tasks
another. ``tui task`` and the app list and run templates only through it.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from tui.config.agent_command import PLACEHOLDER_ENV, command_script, uses
from tui.config.merged import Config, Item, task_defaults
from tui.config.render import render
from tui.config.schema import COMMAND_TYPE, AgentDef, TaskTemplate
from tui.config.taskfile_templates import TaskfileTemplates
from tui.config.template_types import TaskRequest, Template, TemplateError, TemplateSource
from tui.model.agent_kinds import BUILTIN_AGENTS, DEFAULT_TYPE, KINDS
from tui.model.suggest import did_you_mean
from tui.model.task import Task
from tui.model.variables import resolve

PROMPT_ENV = "TUI_PROMPT"  # a shell agent's script reads the prompt from here


def template_sources(config: Config) -> list[TemplateSource]:
    """Every source of runnable templates, in lookup order: the config's, then the project's
    Taskfile (in the current directory)."""
    return [ConfigTemplates(config), TaskfileTemplates(Path.cwd())]


def all_templates(sources: list[TemplateSource]) -> list[Template]:
    """Every template, alphabetically by name (a name two sources share keeps lookup order)."""
    return sorted((t for s in sources for t in s.templates()), key=lambda t: t.name)


def find(sources: list[TemplateSource], wanted: str) -> tuple[TemplateSource, Template]:
    """The template called (or aliased) ``wanted``, or the wildcard pattern it matches (the
    template then carries ``wanted`` as its name); the first source that has it wins."""
    for source in sources:
        for t in source.templates():
            if wanted in (t.name, t.alias):
                return source, t
    for source in sources:
        for t in source.templates():
            if t.matches(wanted):
                # A Taskfile task is run by the name given (go-task resolves aliases and
                # patterns itself); a config template by its own name.
                named = t.wildcard or t.source == "taskfile"
                return source, (replace(t, name=wanted, wildcard=False) if named else t)
    names = [n for t in all_templates(sources) for n in (t.name, t.alias) if n]
    guess = did_you_mean(wanted, names)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise TemplateError(f"no template named {wanted!r}{hint} (`tui task --list` shows them)")


class ConfigTemplates:
    """The [tasks.NAME] tables of the merged config."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.warnings: list[str] = []

    def templates(self) -> list[Template]:
        return [
            Template(
                i.name,
                i.model.alias if self.config.aliases.get(i.model.alias) == i.name else "",
                i.model.description,
                i.origin.scope if i.origin else "global",
            )
            for i in self.config.tasks.values()
        ]

    async def make_task(self, name: str, request: TaskRequest) -> Task:
        return await build_task(self.config, name, request, self.warnings)


def _pick(kind: str, wanted: str, known: list[str], *fallbacks: str) -> str:
    if wanted and wanted not in known:
        guess = did_you_mean(wanted, known)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        raise TemplateError(f"unknown {kind} {wanted!r}: {hint}known: {', '.join(known) or '-'}")
    return next((c for c in (wanted, *fallbacks) if c), "")


async def build_task(
    config: Config, name: str, request: TaskRequest, warnings: list[str] | None = None
) -> Task:
    """The Task for template ``name``: role, required contexts and the template's prompt, in
    that order, for the selected agent. What does not stop it (a missing file) is added to
    ``warnings``."""
    item = config.task(name)
    if item is None:
        raise TemplateError(f"no template named {name!r} in the config")
    t, s = item.model, config.settings
    roles = list(config.roles)
    role = _pick("role", request.role, roles, t.role, s.default_role, *roles[:1])
    agents = list(dict.fromkeys([*config.agents, *BUILTIN_AGENTS]))
    first_agent = next(iter(config.agents), DEFAULT_TYPE)
    agent_name = _pick("agent", request.agent, agents, t.agent, s.default_agent, first_agent)
    agent = config.agent(agent_name)
    assert agent is not None  # _pick and the loader checked every name

    variables = _variables(item, request.vars)
    a = agent.model
    wanted_model = request.model or item.model.defaults.get("model") or a.default_model
    model = a.models.get(wanted_model, wanted_model)
    # A command agent that takes the role by itself ({role}, {role_file}) gets it apart.
    role_apart = a.type == COMMAND_TYPE and (
        uses(a.command, "role") or uses(a.command, "role_file")
    )
    blocks: list[tuple[str, Item[Any]]] = [("roles", config.roles[role])] if role else []
    wanted = [c for c, i in config.contexts.items() if i.model.required]
    wanted += [c for c in t.contexts if c not in wanted]
    blocks += [("contexts", config.contexts[c]) for c in wanted]
    blocks.append(("tasks", item))
    parts, role_text = [], ""
    for section, block in blocks:
        assert block.origin is not None  # only built-in agents lack a file
        text = await render(
            block.model,
            block.origin,
            section,
            block.name,
            instructions=request.instructions,
            settings=s,
            cwd=config.project_dir,
            append_instructions=block is item,
            variables=variables if block is item else None,
            model=model,
            warnings=warnings,
        )
        if section == "roles" and role_apart:
            role_text = text
        elif text:
            parts.append(text)
    return _task(config, item, agent, "\n\n".join(parts), model, role_text)


def _task(
    config: Config,
    item: Item[TaskTemplate],
    agent: Item[AgentDef],
    prompt: str,
    model: str,
    role: str = "",
) -> Task:
    a = agent.model
    t = item.model
    defaults = t.defaults
    fields: dict[str, object] = {
        "type": "shell" if a.type == COMMAND_TYPE else a.type,
        "model": model,
        "additional_args": [*a.args, *defaults.get("additional_args", [])],
        "env": {**a.env, **defaults.get("env", {})},
        "project_dir": str(_project_dir(config, item)),
    }
    env: dict[str, str] = fields["env"]  # type: ignore[assignment]
    if a.type == "shell":
        env[PROMPT_ENV] = prompt
        instructions = a.script
    elif a.type == COMMAND_TYPE:
        # The CLI's argv comes from the config's template; every value from the environment.
        values = {
            "prompt": prompt,
            "role": role,
            "model": model,
            "bin": os.path.expanduser(a.bin),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        env.update({PLACEHOLDER_ENV[k]: v for k, v in values.items()})
        instructions = command_script(a.command)
    else:
        instructions = prompt
        if a.bin:
            env[KINDS[a.type].bin_env] = a.bin
    return task_defaults(item.name, t, instructions, **fields)


def _variables(item: Item[TaskTemplate], given: dict[str, str]) -> dict[str, str]:
    """The template's variables from NAME=VALUE text; TemplateError listing every problem."""
    declared = item.model.variables
    types = {v.name: v.type for v in declared}
    typed: dict[str, Any] = {}
    problems = []
    for name, text in given.items():
        kind = types.get(name, "string")
        if kind == "number":
            try:
                typed[name] = float(text)
            except ValueError:
                problems.append(f"--var {name}: must be a number; got {text!r}")
        elif kind == "boolean":
            if text.lower() not in ("true", "false"):
                problems.append(f"--var {name}: must be true or false; got {text!r}")
            typed[name] = text.lower() == "true"
        else:
            typed[name] = text
    values, found = resolve(declared, typed)
    problems += [f"--var {f.removeprefix('vars.')}: {message} ({fix})" for f, message, fix in found]
    if problems:
        raise TemplateError(f"template {item.name!r}: " + "; ".join(problems))
    return values


def _project_dir(config: Config, item: Item[TaskTemplate]) -> Path:
    given = item.model.defaults.get("project_dir")
    if not given or item.origin is None:
        return config.project_dir
    path = Path(given).expanduser()
    return path if path.is_absolute() else item.origin.base / path
