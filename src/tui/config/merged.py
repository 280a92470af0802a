"""The whole configuration: every file's agents, roles, contexts and tasks checked and merged
by name (a local entry replaces the global one of the same name whole), the XML task templates
added, references between entries resolved and aliases collected. Its files and [settings] are
read by tui.config.load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from tui.config.agent_command import check_command
from tui.config.load import (
    ConfigError,
    Origin,
    config_files,
    load_executor,
    load_settings,
    model_issues,
    read_files,
)
from tui.config.paths import global_config_path
from tui.config.schema import (
    AGENT_DEFAULTS,
    NAME_FIX,
    NAME_RE,
    SECTION_MODELS,
    TASK_DEFAULTS,
    AgentDef,
    ContextDef,
    Role,
    Settings,
    Source,
    TaskTemplate,
)
from tui.config.start_keys import not_used, used
from tui.model.agent_kinds import BUILTIN_AGENTS
from tui.model.error_text import human_error
from tui.model.issues import Issue
from tui.model.suggest import did_you_mean
from tui.model.task import Task

M = TypeVar("M", bound=BaseModel)
XML_NAME_RE = re.compile(r"^[a-z0-9]+([-_][a-z0-9]+)*$")


@dataclass
class Item(Generic[M]):
    name: str
    model: M
    origin: Origin | None  # None for a built-in agent


@dataclass
class Config:
    project_dir: Path
    settings: Settings = field(default_factory=Settings)
    agents: dict[str, Item[AgentDef]] = field(default_factory=dict)
    roles: dict[str, Item[Role]] = field(default_factory=dict)
    contexts: dict[str, Item[ContextDef]] = field(default_factory=dict)
    tasks: dict[str, Item[TaskTemplate]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> task name
    files: list[Origin] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    # (section, name) of entries left out for their own errors: a reference to one is not
    # reported again as "unknown" (one real error, no cascade).
    broken: set[tuple[str, str]] = field(default_factory=set)

    def agent(self, name: str) -> Item[AgentDef] | None:
        if name in self.agents:
            return self.agents[name]
        if name in BUILTIN_AGENTS:
            return Item(name, AgentDef(type=name), None)
        return None

    def task(self, name_or_alias: str) -> Item[TaskTemplate] | None:
        name = self.aliases.get(name_or_alias, name_or_alias)
        return self.tasks.get(name) or self.tasks.get(name.replace("-", "_"))


def load_config(project_dir: Path | None = None) -> Config:
    """The merged configuration; raises ConfigError listing every problem at once."""
    project_dir = (project_dir or Path.cwd()).resolve()
    settings, issues = load_settings(project_dir)
    issues += load_executor(project_dir)[1]
    config = Config(project_dir, settings)
    for origin, data in read_files(project_dir, []):  # read problems are already in issues
        config.files.append(origin)
        unused = not_used(data)
        if unused:
            config.warnings.append(
                Issue(
                    str(origin.path),
                    None,
                    "",
                    f"not used by tui: {', '.join(unused)}",
                    "nothing to do (they are `start` settings); remove them to silence this",
                    "warning",
                )
            )
        if origin.scope == "local" and "agent_task_args" in _table(data.get("settings")):
            # What agents may run is the user's to grant, never a checked-out project's.
            config.warnings.append(
                origin.issue(
                    "settings",
                    "",
                    "agent_task_args",
                    "ignored here: only your own config.toml lets agents pass arguments"
                    " to Taskfile tasks",
                    f"move it to [settings] in {global_config_path()}",
                    "warning",
                )
            )
        for section, model in SECTION_MODELS.items():
            raw = data.get(section, {})
            if not isinstance(raw, dict):
                fix = f"write each entry as a [{section}.NAME] table"
                issues.append(origin.issue(section, "", "", "must be a table of tables", fix))
                continue
            for name, body in raw.items():
                item = _entry(
                    origin, section, name, used(section, body), model, issues, config.warnings
                )
                if item is not None:
                    getattr(config, section)[name] = item
                    config.broken.discard((section, name))
                elif name not in getattr(config, section):
                    config.broken.add((section, name))
    _add_xml_templates(config, issues)
    _check_references(config, issues)
    _collect_aliases(config)
    if issues:
        raise ConfigError(issues, config.warnings)
    return config


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _add_xml_templates(config: Config, issues: list[Issue]) -> None:
    """XML atomic templates beside each config.toml; a local one replaces a global one, and
    one scope may not define a name twice. A template that cannot be used is a warning (the
    Task System's loader warns too): every other template still loads."""
    # Imported here, as in _check_source: `tui run` reads [settings] alone (load_settings),
    # and the whole config only when a task names a system part.
    from tui.config.xml_templates import read_xml_templates, template_files

    for _, base_dir, scope in config_files(config.project_dir):
        folder = base_dir if scope == "global" else base_dir / ".tui"
        for path in template_files(folder):
            origin = Origin(path, base_dir, scope)
            added = False
            for name, body in read_xml_templates(path, config.warnings):
                old = config.tasks.get(name)
                if old is not None and old.origin is not None and old.origin.scope == scope:
                    fix = f"rename one of them (the other is in {old.origin.path})"
                    issues.append(
                        Issue(str(path), None, "task@name", f"{name!r} defined twice", fix)
                    )
                    continue
                if old is not None and scope == "global":
                    continue  # the project's own template of that name wins
                problems: list[Issue] = []
                item = _entry(origin, "tasks", name, body, TaskTemplate, problems, config.warnings)
                for p in problems:
                    message = f"{p.message}; template {name!r} left out"
                    config.warnings.append(
                        Issue(p.file, p.line, p.field, message, p.fix, "warning")
                    )
                if item is not None:
                    config.tasks[name] = item
                    added = True
            if added:
                config.files.append(origin)


def _entry(
    origin: Origin,
    section: str,
    name: str,
    body: Any,
    model: type[BaseModel],
    issues: list[Issue],
    warnings: list[Issue] | None = None,
) -> Item[Any] | None:
    ok = True
    # The Task System names templates with underscores (validate_input): valid in XML, and
    # found by their kebab-case form too.
    xml = origin.path.suffix == ".xml"
    if not (XML_NAME_RE if xml else NAME_RE).match(name):
        issues.append(origin.issue(section, name, "", f"invalid name {name!r}", NAME_FIX))
        ok = False
    if not isinstance(body, dict):
        fix = f"write it as a table: [{section}.{name}] with keys under it"
        issues.append(origin.issue(section, name, "", "must be a table", fix))
        return None
    try:
        value = model.model_validate(body)
    except ValidationError as exc:
        issues += model_issues(exc, origin, section, name, model)
        return None
    before = len(issues)
    if isinstance(value, Source):
        _check_source(value, origin, section, name, issues, warnings)
    if isinstance(value, AgentDef) and value.type == "command":
        for message, fix in check_command(value.command):
            issues.append(origin.issue(section, name, "command", message, fix))
    if isinstance(value, TaskTemplate):
        _check_template(value, origin, name, issues)
    return Item(name, value, origin) if ok and len(issues) == before else None


def _check_source(
    src: Source,
    origin: Origin,
    section: str,
    name: str,
    issues: list[Issue],
    warnings: list[Issue] | None = None,
) -> None:
    from tui.config import placeholders
    from tui.config.interpreters import script_argv

    if src.shell and src.command:
        try:
            script_argv(src.shell, src.command, src.shell_args)
        except ValueError as e:
            issues.append(origin.issue(section, name, "shell", str(e), "set shell_args"))
    if src.prompt is None:
        return
    given = {k for k in ("file", "command") if getattr(src, k)}
    declared = [v.name for v in src.variables] if isinstance(src, TaskTemplate) else []
    for message, fix, severity in placeholders.check(src.prompt, given, declared):
        if severity == "warning":
            if warnings is not None:
                where = (section, name, "prompt")
                warnings.append(origin.issue(*where, message, fix, "warning"))
        else:
            issues.append(origin.issue(section, name, "prompt", message, fix))


def _check_template(t: TaskTemplate, origin: Origin, name: str, issues: list[Issue]) -> None:
    if t.alias and not NAME_RE.match(t.alias):
        issues.append(origin.issue("tasks", name, "alias", f"invalid alias {t.alias!r}", NAME_FIX))
    allowed = (*TASK_DEFAULTS, *AGENT_DEFAULTS)
    extra = t.defaults
    for key in extra:
        if key not in allowed:
            known = [*TaskTemplate.model_fields, *allowed]
            guess = did_you_mean(key, known)
            fix = f"did you mean `{guess[0]}`?" if guess else f"allowed keys: {', '.join(known)}"
            issues.append(origin.issue("tasks", name, key, f"unknown key '{key}'", fix))
    if any(k not in allowed for k in extra):
        return
    try:  # the defaults must make a valid task, so a bad value is caught before any run
        task_defaults(name, t, "check")
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = tuple(p for p in err["loc"] if p != "agent")
            message, fix = human_error(err)
            field_ = ".".join(str(p) for p in loc)
            issues.append(origin.issue("tasks", name, field_, message, fix))


def task_defaults(name: str, t: TaskTemplate, instructions: str, **agent: Any) -> Task:
    """The YAML task a template stands for, before selection fills in agent and prompt."""
    extra = t.defaults
    fields = {k: v for k, v in extra.items() if k in TASK_DEFAULTS}
    agent_fields = {k: v for k, v in extra.items() if k in AGENT_DEFAULTS}
    return Task.model_validate(
        {
            "name": name,
            "description": t.description,
            **fields,
            "agent": {**agent_fields, **agent, "instructions": instructions},
        }
    )


def _check_references(config: Config, issues: list[Issue]) -> None:
    def unknown(
        origin: Origin | None, where: tuple[str, str, str], kind: str, value: str, names: list[str]
    ) -> None:
        guess = did_you_mean(value, names)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        if (kind, value) in config.broken:
            return  # its own error is already reported
        fix = f"{hint}define [{kind}.{value}], or use one of: {', '.join(names) or '(none yet)'}"
        path = origin or (config.files[-1] if config.files else None)
        if path is not None:
            issues.append(path.issue(*where, f"unknown {kind[:-1]} {value!r}", fix))

    agent_names = list(dict.fromkeys([*config.agents, *BUILTIN_AGENTS]))
    for item in config.tasks.values():
        t = item.model
        if t.role and t.role not in config.roles:
            unknown(item.origin, ("tasks", item.name, "role"), "roles", t.role, list(config.roles))
        if t.agent and config.agent(t.agent) is None:
            unknown(item.origin, ("tasks", item.name, "agent"), "agents", t.agent, agent_names)
        for c in t.contexts:
            if c not in config.contexts:
                where = ("tasks", item.name, "contexts")
                unknown(item.origin, where, "contexts", c, list(config.contexts))
    s = config.settings
    settings_origin = _settings_origin(config)
    if s.default_role and s.default_role not in config.roles:
        where = ("settings", "", "default_role")
        unknown(settings_origin, where, "roles", s.default_role, list(config.roles))
    if s.default_agent and config.agent(s.default_agent) is None:
        where = ("settings", "", "default_agent")
        unknown(settings_origin, where, "agents", s.default_agent, agent_names)


def _settings_origin(config: Config) -> Origin | None:
    with_settings = [o for o in config.files if re.search(r"^[ \t]*\[settings", o.text, re.M)]
    return with_settings[-1] if with_settings else None


def _collect_aliases(config: Config) -> None:
    """Aliases unique after the merge: the first in TOML order keeps it, with a warning."""
    owner: dict[str, str] = {}
    for item in config.tasks.values():
        alias = item.model.alias
        if not alias or item.origin is None:
            continue
        if alias in config.tasks and alias != item.name:
            config.warnings.append(
                item.origin.issue(
                    "tasks",
                    item.name,
                    "alias",
                    f"alias {alias!r} is the name of task {alias!r}; the name wins",
                    "choose another alias",
                    "warning",
                )
            )
        elif alias in owner:
            config.warnings.append(
                item.origin.issue(
                    "tasks",
                    item.name,
                    "alias",
                    f"alias {alias!r} is already used by task {owner[alias]!r}, which keeps it",
                    f"choose another alias for {item.name!r}",
                    "warning",
                )
            )
        else:
            owner[alias] = item.name
    config.aliases = owner
