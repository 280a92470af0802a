"""Import XML atomic templates (``<task type="atomic">``) into the config's template model.

    <task type="atomic" name="summarise" alias="sum" agent="claude" role="reviewer">
      <description>Summarise a file</description>
      <inputs>
        <input name="path" required="true">the file to read</input>
        <input name="words" type="number" default="100"/>
      </inputs>
      <instructions>Summarise {{path}} in {{words}} words. {instructions}</instructions>
      <output_format type="json" schema="object"/>
      <context_management><context>house-rules</context></context_management>
    </task>

Files live in ``templates/*.xml`` next to each config.toml (the user config dir, and
``.tui/`` in the project). The prompt follows the same rules as a TOML template's.

Templates written for the Task System load as it loads them: without ``<instructions>`` the
``<description>`` is the prompt; ``<parameters>`` declare inputs as ``<inputs>`` do
(``type="integer"`` is a number); ``<system>`` becomes the system prompt, ``<model>`` the
model, ``<file_paths>`` the task's context files; a template without a name takes its
``subtype`` (or its file's name); a file may hold several ``<task>`` elements. What tui does
not do (``<returns>``, ``<inherit_context>``, ``<input from=...>``...) is a warning, and a
template that cannot be used is a warning naming it: the others still load.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.model.issues import Issue
from tui.model.limits import MAX_DEPTH, UnreadableInput, read_bounded

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

TEMPLATE_DIR = "templates"
_TOP = (
    "description",
    "instructions",
    "inputs",
    "parameters",
    "output_format",
    "context_management",
    "system",
    "model",
    "file_paths",
    "returns",
)
_ATTRS = ("type", "name", "alias", "agent", "role", "subtype")
# The Task System's context settings: accepted, and said to do nothing here.
_CONTEXT_SETTINGS = ("inherit_context", "accumulate_data", "accumulation_format", "fresh_context")
_NUMBER_TYPES = ("number", "integer", "int", "float")
_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")


def template_files(config_dir: Path) -> list[Path]:
    folder = config_dir / TEMPLATE_DIR
    return sorted(folder.glob("*.xml")) if folder.is_dir() else []


def read_xml_templates(path: Path, warnings: list[Issue]) -> list[tuple[str, dict[str, Any]]]:
    """(name, [tasks.NAME] table) for each template of one file. Problems are warnings
    naming the file: a template that cannot be used is left out, the others are kept."""

    def warn(field: str, message: str, fix: str, line: int | None = None) -> None:
        warnings.append(Issue(str(path), line, field, message, fix, "warning"))

    try:
        data = read_bounded(str(path))
    except OSError as e:
        warn("", f"cannot read: {e.strerror or e}", "check the file")
        return []
    except UnreadableInput as e:
        warn("", str(e), e.fix)
        return []
    declared = re.match(r"""^\s*<\?xml[^>]*encoding=["']([^"']+)""", data[:200].decode("latin-1"))
    try:
        text = data.decode(declared.group(1) if declared else "utf-8")
    except (LookupError, ValueError) as e:  # encoding="bogus", or bytes not in it
        warn("", f"cannot read its encoding: {e}", 'save it as UTF-8 (encoding="UTF-8")')
        return []
    if re.search(r"<!(DOCTYPE|ENTITY)", text):
        warn("", "DOCTYPE and entity declarations are not allowed", "remove it; write plain XML")
        return []
    # Imported here: every command that reads the config (each `tui run`) would pay ~3 ms
    # for them, and most configs have no templates folder.
    import xml.etree.ElementTree as ET

    import defusedxml.ElementTree as DefusedET
    from defusedxml import DefusedXmlException

    try:
        # Wrapped, so a file may hold several <task> elements side by side. No DTD, so no
        # entities to expand (billion laughs) or fetch (external entities).
        root = DefusedET.fromstring(f"<tui-file>{_DECL.sub('', text)}</tui-file>", forbid_dtd=True)
    except DefusedXmlException:
        warn("", "DOCTYPE and entity declarations are not allowed", "remove it; write plain XML")
        return []
    except ET.ParseError as e:
        line = e.position[0] if e.position[0] > 0 else None
        warn("", f"invalid XML: {e}; its templates are left out", "close and quote its tags", line)
        return []
    if _deeper_than(root, MAX_DEPTH + 1):  # +1: our wrapper
        warn("", f"nested more than {MAX_DEPTH} levels deep", "flatten the elements")
        return []
    tasks = [el for el in root if el.tag == "task"]
    if not tasks and len(root) == 1:
        tasks = [el for el in root[0] if el.tag == "task"]  # <templates><task/>...</templates>
    atomic = [t for t in tasks if t.get("type") == "atomic"]
    if not atomic:
        warn("", "no atomic template in it", 'write <task type="atomic" name="...">')
        return []
    found = []
    unnamed = 0
    for element in atomic:
        name = element.get("name") or element.get("subtype") or ""
        if not name:
            unnamed += 1
            stem = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "template"
            name = stem if unnamed == 1 else f"{stem}-{unnamed}"
            warn("task@name", f"a template without a name is listed as {name!r}", "add name=")
        table = _table(element, name, warn)
        if table is not None:
            found.append((name, table))
    return found


def _table(element: ET.Element, name: str, warn: Any) -> dict[str, Any] | None:
    """The [tasks.NAME] table of one <task>; None (with a warning) when it cannot be used.
    What it holds that tui does not use is one warning, listing all of it."""
    where = f"task {name!r}"
    unused: list[str] = []
    unused += [f"unknown attribute {a!r}" for a in element.attrib if a not in _ATTRS]
    unused += [f"unknown element <{c.tag}>" for c in element if c.tag not in _TOP]
    table: dict[str, Any] = {
        k: element.get(k) for k in ("alias", "agent", "role") if element.get(k)
    }
    description = _text(element.find("description"))
    if description:
        table["description"] = description
    instructions = _text(element.find("instructions"))
    if not instructions and not description:
        warn(
            "instructions",
            f"{where}: no <instructions> and no <description>; left out",
            "say what to do in <instructions>",
        )
        return None
    table["prompt"] = instructions or description  # the Task System prompts with the description
    inputs = list(element.iterfind("inputs/input")) + list(element.iterfind("parameters/parameter"))
    table["variables"] = [_input(i) for i in inputs]
    taken_from = [i.get("name", "") for i in inputs if i.get("from")]
    if taken_from:
        unused.append(f"input {', '.join(taken_from)} from=... (give it with --var NAME=VALUE)")
    if (fmt := element.find("output_format")) is not None:
        table["output_format"] = dict(fmt.attrib)
    if system := _text(element.find("system")):
        table["system_prompt_append"] = system
    if (model := element.find("model")) is not None:
        chosen = model.get("preferred") or _text(model)
        if chosen:
            table["model"] = chosen
        if model.get("fallback"):
            unused.append(f"model fallback {model.get('fallback')!r} (the preferred one runs)")
    if (paths := element.find("file_paths")) is not None:
        source = paths.get("source", "literal")
        listed = [_text(p) for p in paths.iterfind("path") if _text(p)]
        if source != "literal":
            unused.append(f"file_paths source={source!r} (list <path> elements)")
        elif listed:
            table["context_files"] = listed
    if element.find("returns") is not None:
        unused.append("<returns> (<output_format type= schema=/> checks a result)")
    contexts = [(c.text or c.get("name") or "").strip() for c in element.iterfind(".//context")]
    if contexts:
        table["contexts"] = [c for c in contexts if c]
    settings = [
        c.tag for c in element.iterfind("context_management/*") if c.tag in _CONTEXT_SETTINGS
    ]
    if settings:
        unused.append(f"{', '.join(dict.fromkeys(settings))} (every run starts fresh)")
    if unused:
        warn(
            "task",
            f"{where}: not used by tui: {'; '.join(unused)}",
            "nothing to do; the rest of the template is used",
        )
    return table


def _text(element: ET.Element | None) -> str:
    if element is None:
        return ""
    return textwrap.dedent("".join(element.itertext())).strip()


def _deeper_than(root: ET.Element, limit: int) -> bool:
    todo = [(root, 1)]
    while todo:
        element, depth = todo.pop()
        if depth > limit:
            return True
        todo += [(child, depth + 1) for child in element]
    return False


def _input(element: ET.Element) -> dict[str, Any]:
    """<input name= type= default= required=>description</input> as a variable."""
    var: dict[str, Any] = {"name": element.get("name", "")}
    kind = element.get("type", "string")
    kind = "number" if kind in _NUMBER_TYPES else kind
    var["type"] = kind
    default = element.get("default")
    if default is not None:
        var["default"] = _typed(kind, default)
    if element.get("required", "").lower() in ("true", "yes", "1"):
        var["required"] = True
    if element.text and element.text.strip():
        var["description"] = element.text.strip()
    return var


def _typed(kind: str, text: str) -> Any:
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            return text  # the variable model reports it with the field
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), text)
    return text
