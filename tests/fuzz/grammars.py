"""Hypothesis strategies for tui's input files: task YAML, config.toml and XML templates,
each from a grammar of valid input and then mutated (characters and structure), and the
checks every case must pass: a clear error or valid tasks, never a traceback. Shared by the
suite (tests/fuzz/) and the on-demand soak (bench/soak_inputs.py)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tui.config.load import ConfigError
from tui.config.merged import load_config
from tui.config.xml_templates import read_xml_templates
from tui.model.issues import Issue, TaskFileError
from tui.model.loader import load_task_text
from tui.model.task import STORED, Task

# -- pieces ---------------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,4})?", fullmatch=True)
TEXT = st.text(max_size=40)
DURATIONS = st.one_of(
    st.sampled_from(["30m", "1h30m", "45s", "1.5h", "300ms", "0", "2562047h", "2562048h", "-1s"]),
    st.integers(min_value=-5, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
NUMBERS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40), st.floats(), st.booleans(), TEXT
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT)
ANY_VALUE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# Things that break parsers: YAML/TOML/XML syntax, tags, anchors, huge numbers, odd unicode.
NASTY = [
    ":",
    "- ",
    "&a ",
    "*a",
    "<<: *a",
    "!!python/object/apply:os.system ['id']",
    "!!binary ",
    "{",
    "}",
    "[",
    "]",
    "'",
    '"',
    "\\",
    "#",
    "|",
    ">",
    "\t",
    "\n",
    "\r\n",
    "\x00",
    "\ufeff",
    "\u2028",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "? ",
    "9" * 120,
    "1e999",
    ".nan",
    "-.inf",
    "0x" + "f" * 30,
    "=",
    "[[",
    "]]",
    '"""',
    "<!DOCTYPE x [<!ENTITY e 'x'>]>",
    "&e;",
    "<a>",
    "</a>",
    "<![CDATA[",
    "]]>",
    "<?xml version='1.0'?>",
    "<?xml version='1.0' encoding='shift_jis'?>",
    "<?xml version='1.0' encoding='bogus'?>",
    "\ud7ff",
    "\U0001f600",
]


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(None), strategy)


@st.composite
def agent_tables(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["shell", "claude", "gemini", "codex", "taskfile", "robot"]))
    agent: dict[str, Any] = {"type": kind}
    if kind == "taskfile":
        agent["task"] = draw(NAMES)
        agent["args"] = draw(st.lists(TEXT, max_size=3))
    else:
        agent["instructions"] = draw(st.one_of(TEXT, st.just("echo {{who}}")))
    for key, value in (
        ("model", TEXT),
        ("max_budget_usd", NUMBERS),
        ("permission_mode", st.sampled_from(["acceptEdits", "plan", "bogus"])),
        ("env", st.dictionaries(st.from_regex(r"[A-Z_]{1,8}", fullmatch=True), TEXT, max_size=3)),
        ("project_dir", TEXT),
        ("mcp", st.booleans()),
    ):
        if draw(st.booleans()):
            agent[key] = draw(value)
    return agent


@st.composite
def task_tables(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    task: dict[str, Any] = {"name": draw(NAMES), "agent": draw(agent_tables())}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "id": st.one_of(NAMES, TEXT, st.uuids().map(str)),
        "description": TEXT,
        "timeout": DURATIONS,
        "retry": st.fixed_dictionaries(
            {},
            optional={
                "max_attempts": NUMBERS,
                "backoff": st.sampled_from(["linear", "exponential", "x"]),
                "delay": DURATIONS,
            },
        ),
        "priority": st.sampled_from(["high", "normal", "low", "urgent"]),
        "tags": st.lists(TEXT, max_size=3),
        "depends_on": st.lists(st.sampled_from(names) if names else NAMES, max_size=3),
        "review": st.booleans(),
        "output_format": st.fixed_dictionaries(
            {"type": st.sampled_from(["json", "text", "xml"])},
            optional={"schema": st.sampled_from(["object", "array", "string[]", "number"])},
        ),
        "variables": st.lists(
            st.fixed_dictionaries(
                {"name": st.just("who")},
                optional={
                    "type": st.sampled_from(["string", "number", "boolean", "date"]),
                    "default": SCALARS,
                    "required": st.booleans(),
                },
            ),
            max_size=2,
        ),
        "vars": st.dictionaries(st.just("who"), SCALARS, max_size=1),
        "state": st.just("RUNNING"),
        "surprise": ANY_VALUE,
    }
    for key, strategy in optional.items():
        if draw(st.integers(0, 3)) == 0:
            task[key] = draw(strategy)
    return task


@st.composite
def task_documents(draw: st.DrawFn) -> Any:
    """A task file's data: one task, or a batch whose depends_on name its own tasks."""
    if draw(st.booleans()):
        return draw(task_tables([]))
    names = draw(st.lists(NAMES, min_size=1, max_size=5))
    tasks = [draw(task_tables(names)) for _ in names]
    for task, name in zip(tasks, names, strict=True):
        task["name"] = name
    return {"tasks": tasks}


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few character-level edits: nasty tokens, deletions, duplications."""
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "duplicate", "nest"]))
        if op == "insert":
            text = text[:at] + draw(st.one_of(st.sampled_from(NASTY), TEXT)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif op == "duplicate":
            text = text[:at] + text[at : at + draw(st.integers(1, 200))] * 2 + text[at:]
        else:
            depth = draw(st.integers(1, 200))
            text = text[:at] + "[" * depth + "]" * depth + text[at:]
    return text


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@st.composite
def alias_games(draw: st.DrawFn) -> str:
    """Anchors, aliases and merge keys around a valid task, some of them bombs."""
    width = draw(st.integers(1, 12))
    levels = draw(st.integers(1, 10))
    lines = ["x0: &x0 {type: shell, instructions: echo}"]
    for i in range(1, levels):
        refs = ", ".join([f"*x{i - 1}"] * width)
        lines.append(
            f"x{i}: &x{i} [{refs}]" if draw(st.booleans()) else f"x{i}: &x{i} {{<<: [{refs}]}}"
        )
    lines.append("name: games\nagent: *x0")
    return "\n".join(lines) + "\n"


TASK_FILES = st.one_of(
    task_documents().map(_yaml),
    task_documents().map(_yaml).flatmap(mutated),
    alias_games(),
    st.text(max_size=200),
)

# -- config.toml and XML templates ----------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if value == value and abs(value) != float("inf") else '"nan"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
        )
    return json.dumps(str(value))


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    lines = ["[settings]"]
    settings = {
        "default_agent": st.sampled_from(["claude", "echo", "nobody"]),
        "concurrency": NUMBERS,
        "command_timeout": DURATIONS,
        "notifications": st.sampled_from(["auto", "osc9", "loud"]),
        "agent_task_args": st.lists(NAMES, max_size=3),
        "theme": TEXT,
    }
    for key, strategy in settings.items():
        if draw(st.booleans()):
            lines.append(f"{key} = {_toml_value(draw(strategy))}")
    for _ in range(draw(st.integers(0, 3))):
        section = draw(st.sampled_from(["agents", "roles", "contexts", "tasks", "bogus"]))
        name = draw(st.one_of(NAMES, TEXT))
        lines.append(f"[{section}.{json.dumps(name)}]")
        bodies: dict[str, dict[str, st.SearchStrategy[Any]]] = {
            "agents": {
                "type": st.sampled_from(["shell", "claude", "x"]),
                "script": TEXT,
                "env": st.dictionaries(
                    st.from_regex(r"[A-Z]{1,6}", fullmatch=True), TEXT, max_size=2
                ),
            },
            "roles": {"prompt": TEXT},
            "contexts": {"prompt": TEXT, "required": st.booleans()},
            "tasks": {
                "prompt": st.sampled_from(["do {instructions}", "{nope}", "{{who}}"]),
                "alias": NAMES,
                "timeout": DURATIONS,
                "priority": TEXT,
            },
            "bogus": {"x": SCALARS},
        }
        for key, strategy in bodies[section].items():
            if draw(st.booleans()):
                lines.append(f"{key} = {_toml_value(draw(strategy))}")
    return "\n".join(lines) + "\n"


CONFIG_FILES = st.one_of(config_texts(), config_texts().flatmap(mutated), st.text(max_size=200))


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


@st.composite
def xml_texts(draw: st.DrawFn) -> str:
    name = draw(st.one_of(NAMES, TEXT))
    kinds = st.sampled_from(["string", "number", "boolean", "date"])
    inputs = "".join(
        f'<input name="{_attr(draw(NAMES))}" type="{draw(kinds)}"'
        f' default="{_attr(str(draw(SCALARS)))}"'
        f' required="{draw(st.sampled_from(["true", "no"]))}"/>'
        for _ in range(draw(st.integers(0, 3)))
    )
    instructions = _attr(draw(st.sampled_from(["Summarise {instructions}", "{{path}}", "", "x"])))
    extra = draw(
        st.sampled_from(
            [
                "",
                "<bogus/>",
                '<output_format type="json" schema="object"/>',
                "<context_management><context>house</context></context_management>",
            ]
        )
    )
    root = draw(st.sampled_from(['task type="atomic"', 'task type="molecular"', "template"]))
    return (
        f'<?xml version="1.0"?>\n<{root} name="{_attr(name)}" agent="claude">'
        f"<description>{_attr(draw(TEXT))}</description><inputs>{inputs}</inputs>"
        f"<instructions>{instructions}</instructions>{extra}</{root.split()[0]}>\n"
    )


XML_FILES = st.one_of(xml_texts(), xml_texts().flatmap(mutated), st.text(max_size=200))

# -- the checks -----------------------------------------------------------------------------


def _clear(issues: list[Issue], file: str | None = None) -> None:
    assert issues, "an error without issues"
    for issue in issues:
        assert issue.message.strip(), issue
        assert "Traceback" not in issue.message, issue
        if file is not None:
            assert issue.file == file, issue


def check_task_file(text: str) -> str:
    """'valid' or 'error'; anything else raises (the fuzz failure)."""
    try:
        result = load_task_text(text, "fuzz.yaml")
    except TaskFileError as e:
        _clear(e.issues, "fuzz.yaml")
        return "error"
    for task in result.tasks:
        assert isinstance(task, Task)
        # A valid task can be stored and read back as it was.
        again = Task.model_validate_json(task.model_dump_json(), context=STORED)
        assert again == task, (task, again)
    return "valid"


@contextmanager
def config_dirs() -> Iterator[tuple[Path, Path]]:
    """(user config dir, project dir), TUI_CONFIG_DIR pointing at the first."""
    old = os.environ.get("TUI_CONFIG_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        user, project = Path(tmp, "user"), Path(tmp, "project")
        (user / "templates").mkdir(parents=True)
        project.mkdir()
        os.environ["TUI_CONFIG_DIR"] = str(user)
        try:
            yield user, project
        finally:
            if old is None:
                os.environ.pop("TUI_CONFIG_DIR", None)
            else:
                os.environ["TUI_CONFIG_DIR"] = old


def check_config(user: Path, project: Path, toml: str, xml: str | None = None) -> str:
    (user / "config.toml").write_text(toml, encoding="utf-8", errors="surrogatepass")
    template = user / "templates" / "fuzz.xml"
    if xml is None:
        template.unlink(missing_ok=True)
    else:
        template.write_text(xml, encoding="utf-8", errors="surrogatepass")
    try:
        load_config(project)
    except ConfigError as e:
        _clear(e.issues)
        return "error"
    return "valid"


def check_xml(path: Path, xml: str) -> str:
    path.write_text(xml, encoding="utf-8", errors="surrogatepass")
    issues: list[Issue] = []
    found = read_xml_templates(path, issues)
    if not found:
        _clear(issues, str(path))
        return "error"
    for name, table in found:
        assert isinstance(name, str) and isinstance(table, dict)
    return "valid"


def check_config_text(toml: str) -> str:
    """``check_config`` of one config.toml, in directories of its own."""
    with config_dirs() as (user, project):
        return check_config(user, project, toml)


def check_xml_text(xml: str) -> str:
    """``check_xml`` of one template file, and the same file as a config's template."""
    with config_dirs() as (user, project):
        first = check_xml(project / "fuzz.xml", xml)
        assert check_config(user, project, "", xml) in ("valid", "error")
        return first


# Every kind of input file: its cases and its check ('valid' or 'error'; anything else raises).
# The suite runs a few of each, the soak (bench/soak_inputs.py) many.
CHECKS: dict[str, tuple[st.SearchStrategy[str], Callable[[str], str]]] = {
    "task-file": (TASK_FILES, check_task_file),
    "config": (CONFIG_FILES, check_config_text),
    "xml": (XML_FILES, check_xml_text),
}
