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
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as DefusedET
from defusedxml import DefusedXmlException

from tui.model.issues import Issue
from tui.model.limits import MAX_DEPTH, UnreadableInput, read_bounded

TEMPLATE_DIR = "templates"
_TOP = ("description", "instructions", "inputs", "output_format", "context_management")
_ATTRS = ("type", "name", "alias", "agent", "role")


def template_files(config_dir: Path) -> list[Path]:
    folder = config_dir / TEMPLATE_DIR
    return sorted(folder.glob("*.xml")) if folder.is_dir() else []


def read_xml_template(path: Path, issues: list[Issue]) -> tuple[str, dict[str, Any]] | None:
    """(name, [tasks.NAME] table) for one file, or None with the problems in ``issues``."""

    def problem(field: str, message: str, fix: str, line: int | None = None) -> None:
        issues.append(Issue(str(path), line, field, message, fix))

    try:
        # No DTD, so no entities to expand (billion laughs) or fetch (external entities).
        root = DefusedET.fromstring(read_bounded(str(path)), forbid_dtd=True)
    except ET.ParseError as e:
        problem("", f"invalid XML: {e}", "check the tags are closed and quoted", e.position[0])
        return None
    except DefusedXmlException:
        problem("", "DOCTYPE and entity declarations are not allowed", "remove it; write plain XML")
        return None
    except OSError as e:
        problem("", f"cannot read: {e.strerror}", "check the file")
        return None
    except UnreadableInput as e:
        problem("", str(e), e.fix)
        return None
    except (LookupError, ValueError) as e:  # encoding="bogus", or a multi-byte one
        problem("", f"cannot read its encoding: {e}", 'save it as UTF-8 (encoding="UTF-8")')
        return None
    if _deeper_than(root, MAX_DEPTH):
        problem("", f"nested more than {MAX_DEPTH} levels deep", "flatten the elements")
        return None
    if root.tag != "task" or root.get("type") != "atomic":
        problem("", "not an atomic template", 'the root must be <task type="atomic" name="...">')
        return None
    for attr in root.attrib:
        if attr not in _ATTRS:
            problem(f"task@{attr}", f"unknown attribute {attr!r}", f"use {', '.join(_ATTRS)}")
    name = root.get("name", "")
    if not name:
        problem("task@name", "the template needs a name", 'add name="my-template" to <task>')
        return None
    table: dict[str, Any] = {k: root.get(k) for k in ("alias", "agent", "role") if root.get(k)}
    for child in root:
        if child.tag not in _TOP:
            problem(child.tag, f"unknown element <{child.tag}>", f"use {', '.join(_TOP)}")
    if (d := root.find("description")) is not None:
        table["description"] = (d.text or "").strip()
    instructions = root.find("instructions")
    if instructions is None or not (instructions.text or "").strip():
        problem("instructions", "<instructions> is missing or empty", "say what to do in it")
        return None
    table["prompt"] = _dedent(instructions.text or "")
    table["variables"] = [_input(i) for i in root.iterfind("inputs/input")]
    if (fmt := root.find("output_format")) is not None:
        table["output_format"] = dict(fmt.attrib)
    contexts = [(c.text or c.get("name") or "").strip() for c in root.iterfind(".//context")]
    if contexts:
        table["contexts"] = [c for c in contexts if c]
    return name, table


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


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()
