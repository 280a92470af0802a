"""Read the global and the project ``config.toml``, check them, and merge their [settings] and
[executor]: what the app and every command (`tui run` too) need to start. The whole Config
(agents, roles, contexts, tasks) is built from the same files by tui.config.merged.

Merge: settings merge key by key (local wins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tui.config.paths import global_config_path, local_config_path, user_config_dir
from tui.config.schema import SECTIONS, ExecutorSettings, Settings
from tui.config.start_keys import used
from tui.config.toml_source import TomlProblem, read_toml
from tui.model.classify import PARTIAL, Classifier
from tui.model.error_text import human_error
from tui.model.issues import Issue, TaskFileError
from tui.model.suggest import did_you_mean
from tui.model.workflow import Summarizer

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


def read_files(project_dir: Path, issues: list[Issue]) -> list[tuple[Origin, dict[str, Any]]]:
    """Each config file there is, parsed, in merge order; what cannot be read goes to issues."""
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


def model_issues(
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
        issues += model_issues(exc, origin, name, "", model)
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
        issues += model_issues(exc, origin, "settings", "", Settings)
        return None
    if settings.database:
        path = Path(settings.database).expanduser()
        settings.database = str(path if path.is_absolute() else origin.base / path)
    return settings


def load_executor(project_dir: Path | None = None) -> tuple[ExecutorSettings, list[Issue]]:
    """Merged [executor] (local keys win), never raising."""
    issues: list[Issue] = []
    merged: dict[str, Any] = {}
    for origin, data in read_files(project_dir or Path.cwd(), []):
        raw = data.get("executor")
        if raw is None:
            continue
        if not isinstance(raw, dict):
            issues.append(origin.issue("executor", "", "", "must be a table", "write [executor]"))
            continue
        try:
            ex = ExecutorSettings.model_validate(raw)
        except ValidationError as exc:
            issues += model_issues(exc, origin, "executor", "", ExecutorSettings)
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
    for origin, data in read_files(project_dir or Path.cwd(), issues):
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
                issues += model_issues(exc, last[name], name, "", AGENT_TABLES[name])
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
