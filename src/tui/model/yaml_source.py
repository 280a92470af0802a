"""Parse YAML while remembering the line of every key, so each issue can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

Path = tuple[str | int, ...]


class YamlSyntaxError(Exception):
    def __init__(self, problem: str, line: int | None, column: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column


@dataclass
class ParsedYaml:
    data: Any
    # (key, index, ...) path -> 1-based line of that key (or list item).
    lines: dict[Path, int] = field(default_factory=dict)
    # Keys written twice in one mapping: (path, line of the repeat, line of the first).
    duplicates: list[tuple[Path, int, int]] = field(default_factory=list)


# libyaml's parser when PyYAML was built with it (several times faster on large batches).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> ParsedYaml:
    """One YAML document with key line numbers; raises ``YamlSyntaxError`` with line/column."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        result = ParsedYaml(data=None)
        if node is not None:
            result.lines[()] = node.start_mark.line + 1
            result.data = _build(loader, node, (), result, set())
        return result
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and problem.startswith("but "):  # "expected X, but found Y"
            problem = f"{exc.context}, {problem}"
        if mark is None:
            raise YamlSyntaxError(problem, None, None) from None
        raise YamlSyntaxError(problem, mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), None, None) from None
    finally:
        loader.dispose()


def _build(
    loader: yaml.SafeLoader, node: yaml.Node, path: Path, out: ParsedYaml, active: set[int]
) -> Any:
    if id(node) in active:
        raise YamlSyntaxError("an alias refers to itself", node.start_mark.line + 1, None)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolve "<<: *defaults" merge keys
        active.add(id(node))
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            # Keys are kept as written: "on"/"yes"/"1" must not turn into bools or ints.
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "<complex key>"
            if key in mapping:
                out.duplicates.append(((*path, key), line, out.lines[(*path, key)]))
            out.lines[(*path, key)] = line
            mapping[key] = _build(loader, value_node, (*path, key), out, active)
        active.discard(id(node))
        return mapping
    if isinstance(node, yaml.SequenceNode):
        active.add(id(node))
        items = []
        for index, item in enumerate(node.value):
            out.lines[(*path, index)] = item.start_mark.line + 1
            items.append(_build(loader, item, (*path, index), out, active))
        active.discard(id(node))
        return items
    return loader.construct_object(node, deep=True)


def line_of(lines: dict[Path, int], path: Path) -> int | None:
    """Line of ``path`` or of its nearest written ancestor (a missing key -> its parent)."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)
