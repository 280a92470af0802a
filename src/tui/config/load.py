"""Read the global and the project ``config.toml``, check them, and merge them into one Config.

Merge: settings merge key by key (local wins); agents, roles, contexts and tasks merge by
name, and a local entry replaces the global one of the same name whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tui.config.agent_command import check_command
from tui.config.paths import global_config_path, local_config_path, user_config_dir
from tui.config.schema import (
    AGENT_DEFAULTS,
    NAME_FIX,
    NAME_RE,
    SECTION_MODELS,
    SECTIONS,
    TASK_DEFAULTS,
    AgentDef,
    ContextDef,
    ExecutorSettings,
    Role,
    Settings,
    Source,
    TaskTemplate,
)
from tui.config.start_keys import not_used, used
from tui.config.toml_source import TomlProblem, read_toml
from tui.model.agent_kinds import BUILTIN_AGENTS
from tui.model.classify import PARTIAL, Classifier
from tui.model.error_text import human_error
from tui.model.issues import Issue, TaskFileError
from tui.model.suggest import did_you_mean
from tui.model.task import Task
from tui.model.workflow import Summarizer

M = TypeVar("M", bound=BaseModel)
XML_NAME_RE = re.compile(r"^[a-z0-9]+([-_][a-z0-9]+)*$")
Scope = Literal["global", "local"]


class ConfigError(TaskFileError):
    """Every problem of every config file, each naming the file, the field and the fix."""


@dataclass(frozen=True)
class Origin:
    path: Path
    base: Path  # relative file and database paths are taken from here
    scope: Scope
    text: str = field(default="", repr=False)

    def line(self, section: str, name: str = "") -> int | None:
        """Line of ``[section.name]`` (or of ``[section]``) in the file, for messages."""
        head = re.escape(section) + (rf"\.\s*\"?{re.escape(name)}\"?" if name else "")
        m = re.search(rf"^[ \t]*\[\s*{head}\s*[\].]", self.text, re.MULTILINE)
        if m is None and name:
            m = re.search(rf"^[ \t]*\"?{re.escape(name)}\"?\s*=", self.text, re.MULTILINE)
        return self.text.count("\n", 0, m.start()) + 1 if m else None

    def issue(
        self,
        section: str,
        name: str,
        field_: str,
        message: str,
        fix: str,
        severity: Literal["error", "warning"] = "error",
    ) -> Issue:
        where = ".".join(p for p in (section, name, field_) if p)
        return Issue(str(self.path), self.line(section, name), where, message, fix, severity)


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


# -- reading -------------------------------------------------------------------------------


# `start` keeps each section in a file of its own beside config.toml; tui reads them too, in
# this order after config.toml, so a `start` config directory works unmodified.
SECTION_FILES = ("agents.toml", "roles.toml", "contexts.toml", "tasks.toml")


def config_files(project_dir: Path) -> list[tuple[Path, Path, Scope]]:
    """(file, base dir, scope) in merge order: global first, then the project's."""
    return [
        (global_config_path(), user_config_dir(), "global"),
        (local_config_path(project_dir), project_dir, "local"),
    ]


def _all_files(project_dir: Path) -> list[tuple[Path, Path, Scope]]:
    """config.toml and the section files beside it, global ones first."""
    out = []
    for path, base, scope in config_files(project_dir):
        out.append((path, base, scope))
        out += [(path.parent / name, base, scope) for name in SECTION_FILES]
    return out


def _read(project_dir: Path, issues: list[Issue]) -> list[tuple[Origin, dict[str, Any]]]:
    found = []
    for path, base, scope in _all_files(project_dir):
        try:
            text, data = read_toml(path)
        except FileNotFoundError:
            continue
        except TomlProblem as e:
            issues.append(Issue(str(path), e.line, "", e.message, e.fix))
            continue
        origin = Origin(path, base, scope, text)
        for key in data:
            if key not in SECTIONS:
                guess = did_you_mean(key, SECTIONS)
                fix = f"did you mean [{guess[0]}]?" if guess else f"use {', '.join(SECTIONS)}"
                issues.append(origin.issue(key, "", "", f"unknown section [{key}]", fix))
        found.append((origin, data))
    return found


def _model_issues(
    exc: ValidationError, origin: Origin, section: str, name: str, model: type[BaseModel]
) -> list[Issue]:
    out = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        field_ = ".".join(str(p) for p in loc)
        if err["type"] == "extra_forbidden":
            guess = did_you_mean(str(loc[-1]), list(model.model_fields))
            fix = (
                f"did you mean `{guess[0]}`?"
                if guess
                else (f"remove it; allowed keys: {', '.join(model.model_fields)}")
            )
            out.append(origin.issue(section, name, field_, f"unknown key '{loc[-1]}'", fix))
            continue
        message, fix = human_error(_relative(err, section))
        out.append(origin.issue(section, name, field_, message, fix or "correct the value"))
    return out


def _relative(err: ErrorDetails, section: str) -> ErrorDetails:
    """human_error words messages and fixes by field path inside a task; a model-level error
    has none. [summarizer] and [classifier] are a task file's `summarizer:`/`classifier:`."""
    prefix = (section,) if section in AGENT_TABLES else ()
    return {**err, "loc": (*prefix, *err["loc"])}


# Tables of their own (not [settings] keys) holding one model each, merged key by key.
AGENT_TABLES: dict[str, type[Summarizer] | type[Classifier]] = {
    "summarizer": Summarizer,  # `context: {transfer: summary}` and compaction
    "classifier": Classifier,  # picks the agent of a task that leaves agent.type out
}


def _agent_table(origin: Origin, name: str, raw: Any, issues: list[Issue]) -> dict[str, Any]:
    """The keys a [summarizer] or [classifier] table sets (a local file's win key by key),
    or {} if wrong."""
    if not isinstance(raw, dict):
        issues.append(origin.issue(name, "", "", "must be a table", f"write [{name}]"))
        return {}
    model = AGENT_TABLES[name]
    try:
        given = model.model_validate(raw, context=PARTIAL)  # checked whole once merged
    except ValidationError as exc:
        issues += _model_issues(exc, origin, name, "", model)
        return {}
    return {k: getattr(given, k) for k in given.model_fields_set}


def _settings(origin: Origin, raw: Any, issues: list[Issue]) -> Settings | None:
    if not isinstance(raw, dict):
        issues.append(origin.issue("settings", "", "", "must be a table", "write [settings]"))
        return None
    for table in AGENT_TABLES:
        if table in raw:
            fix = f"move it to a [{table}] table of its own"
            issues.append(origin.issue("settings", "", table, "not a [settings] key", fix))
            return None
    raw = used("settings", raw)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        issues += _model_issues(exc, origin, "settings", "", Settings)
        return None
    if settings.database:
        path = Path(settings.database).expanduser()
        settings.database = str(path if path.is_absolute() else origin.base / path)
    return settings


def load_executor(project_dir: Path | None = None) -> tuple[ExecutorSettings, list[Issue]]:
    """Merged [executor] (local keys win), never raising."""
    issues: list[Issue] = []
    merged: dict[str, Any] = {}
    for origin, data in _read(project_dir or Path.cwd(), []):
        raw = data.get("executor")
        if raw is None:
            continue
        if not isinstance(raw, dict):
            issues.append(origin.issue("executor", "", "", "must be a table", "write [executor]"))
            continue
        try:
            ex = ExecutorSettings.model_validate(raw)
        except ValidationError as exc:
            issues += _model_issues(exc, origin, "executor", "", ExecutorSettings)
            continue
        merged.update({k: getattr(ex, k) for k in ex.model_fields_set})
    return ExecutorSettings.model_construct(**{**ExecutorSettings().model_dump(), **merged}), issues


def load_settings(project_dir: Path | None = None) -> tuple[Settings, list[Issue]]:
    """Merged [settings] alone, never raising: what the app and commands need to start."""
    issues: list[Issue] = []
    merged: dict[str, Any] = {}
    keys: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {name: {} for name in AGENT_TABLES}
    last: dict[str, Origin] = {}  # the file that set a table last: named if the merge is wrong
    for origin, data in _read(project_dir or Path.cwd(), issues):
        for name, given in tables.items():
            if name in data:
                given.update(_agent_table(origin, name, data[name], issues))
                last[name] = origin
        if "settings" not in data:
            continue
        s = _settings(origin, data["settings"], issues)
        if s is not None:
            merged.update({k: getattr(s, k) for k in s.model_fields_set})
            keys.update(s.keys)
    merged["keys"] = keys
    for name, given in tables.items():
        merged[name] = None
        if given:
            try:
                merged[name] = AGENT_TABLES[name].model_validate(given)
            except ValidationError as exc:
                issues += _model_issues(exc, last[name], name, "", AGENT_TABLES[name])
    return Settings.model_construct(**{**Settings().model_dump(), **merged}), issues


def user_settings() -> Settings:
    """[settings] of the user's own config.toml alone: what a project's file may not grant.
    A broken file grants nothing (`tui config validate` reports it)."""
    path = global_config_path()
    try:
        text, data = read_toml(path)
    except (FileNotFoundError, TomlProblem):
        return Settings()
    origin = Origin(path, user_config_dir(), "global", text)
    return _settings(origin, data.get("settings", {}), []) or Settings()


def settings_or_raise(project_dir: Path | None = None) -> Settings:
    settings, issues = load_settings(project_dir)
    if issues:
        raise ConfigError(issues)
    return settings


# -- the whole configuration ---------------------------------------------------------------


def load_config(project_dir: Path | None = None) -> Config:
    """The merged configuration; raises ConfigError listing every problem at once."""
    project_dir = (project_dir or Path.cwd()).resolve()
    settings, issues = load_settings(project_dir)
    issues += load_executor(project_dir)[1]
    config = Config(project_dir, settings)
    for origin, data in _read(project_dir, []):  # read problems are already in issues
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
        issues += _model_issues(exc, origin, section, name, model)
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
