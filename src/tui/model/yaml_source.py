"""Parse YAML while remembering the line of every key, so each issue can point at it.

Hostile files are bounded before anything is built: a first pass over libyaml's event stream
(no recursion, no expansion) counts depth, values (an alias counts as everything its anchor
stands for, so a 400-byte alias bomb is refused at once), aliases and number lengths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml import events

from tui.model.limits import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_NUMBER_CHARS,
    MAX_TASKS_PER_FILE,
)

Path = tuple[str | int, ...]


class YamlSyntaxError(Exception):
    def __init__(
        self, problem: str, line: int | None, column: int | None, fix: str | None = None
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column
        self.fix = fix  # None: a plain syntax error (the loader words the fix)


class YamlLimitError(YamlSyntaxError):
    """Valid YAML, but past one of tui's limits (see ``tui.model.limits``)."""


@dataclass
class ParsedYaml:
    data: Any
    # (key, index, ...) path -> 1-based line of that key (or list item).
    lines: dict[Path, int] = field(default_factory=dict)
    # Keys written twice in one mapping: (path, line of the repeat, line of the first).
    duplicates: list[tuple[Path, int, int]] = field(default_factory=list)


# libyaml's parser when PyYAML was built with it (several times faster on large batches).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def parse_yaml(text: str) -> ParsedYaml:
    """One YAML document with key line numbers; raises ``YamlSyntaxError`` with line/column
    (``YamlLimitError`` past a limit)."""
    if len(text) > MAX_FILE_BYTES:
        raise YamlLimitError(
            f"file has {len(text):,} characters, more than the {MAX_FILE_BYTES:,} tui reads",
            None,
            None,
            "split it into several files",
        )
    loader = None
    try:
        try:
            return _read_plain(text)
        except _NotPlain:  # anchors, aliases, merge keys...: composed, then built
            pass
        check_limits(text)
        loader = _Loader(text)
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
    except RecursionError:  # the limits above should make this unreachable; never a traceback
        raise YamlLimitError(
            "nested too deeply to read", None, None, "flatten the nesting"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


def check_limits(text: str) -> None:
    """Raise ``YamlLimitError`` at the first place ``text`` passes a limit; syntax errors
    surface as libyaml's own ``MarkedYAMLError``."""
    loader = _Loader(text)
    try:
        _walk(loader, None)
    finally:
        loader.dispose()


class _NotPlain(Exception):
    """The file uses what only the composer handles: anchors, aliases, merge keys, a key
    written twice, a collection as a key, a tag on a key or a collection, a second document,
    a tagged value its constructor refuses."""


def _read_plain(text: str) -> ParsedYaml:
    """A plain file (most are) in one pass over libyaml's events, its limits checked on the
    way: the same values and lines as the composed nodes give, at about half the CPU (no
    node objects, no resolver call for a key). Raises ``_NotPlain`` otherwise."""
    loader = _Loader(text)
    try:
        out = ParsedYaml(data=None)
        # Values that are not text (numbers, bools, dates...) are made once the whole file
        # is within the limits: a refused file constructs none of them.
        for container, slot, node in _walk(loader, out):
            try:
                container[slot] = loader.construct_object(node, deep=True)
            except Exception:  # reported as the composed path reports it, after the limits
                raise _NotPlain from None
        return out
    finally:
        loader.dispose()


_KEY = object()  # a mapping's frame waiting for its next key
# A larger file (8,000 small tasks are ~50,000 values) is counted before anything is built,
# so that one refused at MAX_NODES costs its count and no more.
_PLAIN_NODES = 50_000
Pending = list[tuple[Any, Any, yaml.ScalarNode]]  # (container, key or index, node)


def _walk(loader: Any, out: ParsedYaml | None) -> Pending:
    """Check the limits over the event stream; with ``out``, also build the file's values
    into it (``_NotPlain`` at anything the plain build does not cover), returning the
    scalars still to construct."""
    nodes = aliases = 0
    # Open collections: (anchor, nodes counted when it started); closed anchors' sizes.
    stack: list[tuple[str | None, int]] = []
    sizes: dict[str, int] = {}
    tasks = _TaskCounter()
    # Building: each open collection's [container, its path, a mapping's key or _KEY
    # while it waits for one (None: a sequence)].
    frames: list[list[Any]] = []
    pending: Pending = []
    tags: dict[str, str] = {}  # a plain value's resolved tag (the resolver is regexes)
    lines = out.lines if out is not None else {}
    documents = 0
    get_event = loader.get_event  # None after the stream's end: one call an event
    while (event := get_event()) is not None:
        kind = type(event)
        if len(stack) <= 2:
            tasks.see(event, len(stack))
        if kind is events.ScalarEvent:
            nodes += 1
            value = event.value
            if len(value) > MAX_NUMBER_CHARS:
                _check_number(loader, event)
            if event.anchor is not None:
                if out is not None:
                    raise _NotPlain
                sizes[event.anchor] = 1
            if out is not None:
                top = frames[-1] if frames else None
                if top is not None and top[2] is _KEY:
                    # Keys are kept as written: "on"/"yes"/"1" must not turn into bools.
                    if event.tag is not None or value in ("<<", "=") or value in top[0]:
                        raise _NotPlain  # maybe a merge key; a key written twice
                    lines[(*top[1], value)] = event.start_mark.line + 1
                    top[2] = value
                    continue
                tag = event.tag
                if tag is None or tag == "!":
                    if not event.implicit[0]:  # quoted: text (the resolver's answer too)
                        tag = _STR
                    elif (tag := tags.get(value)) is None:
                        tag = tags[value] = loader.resolve(yaml.ScalarNode, value, (True, False))
                if tag == _STR:
                    _put(out, top, value, event)
                else:
                    node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark)
                    if top is None:  # the whole file is one value
                        pending.append((vars(out), "data", node))
                    else:
                        slot = len(top[0]) if top[2] is None else top[2]
                        pending.append((top[0], slot, node))
                    _put(out, top, None, event)
        elif kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            nodes += 1
            if len(stack) >= MAX_DEPTH:
                raise _limit(
                    event,
                    f"nested more than {MAX_DEPTH} levels deep",
                    "flatten the nesting; a task file needs only a few levels",
                )
            stack.append((event.anchor, nodes))
            if out is not None:
                top = frames[-1] if frames else None
                if event.anchor is not None or event.tag is not None:
                    raise _NotPlain
                if top is not None and top[2] is _KEY:
                    raise _NotPlain  # a collection as a key
                mapping = kind is events.MappingStartEvent
                container: Any = {} if mapping else []
                path = _put(out, top, container, event)
                frames.append([container, path, _KEY if mapping else None])
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            if len(stack) == 2:
                tasks.open = False
            anchor, start = stack.pop()
            if anchor is not None:
                sizes[anchor] = nodes - start + 1
            if out is not None:
                frames.pop()
        elif kind is events.AliasEvent:
            if out is not None:
                raise _NotPlain
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _limit(
                    event,
                    f"more than {MAX_ALIASES:,} aliases (*name) in one file",
                    "write the values out, or split the file",
                )
            if any(anchor == event.anchor for anchor, _ in stack):
                raise _limit(event, f"the alias *{event.anchor} refers to itself", "remove it")
            nodes += sizes.get(event.anchor, 1)  # unknown: the composer says so
            if nodes > MAX_NODES:
                raise _limit(
                    event,
                    f"the alias *{event.anchor} expands the file past {MAX_NODES:,} "
                    "values (an alias bomb?)",
                    "write the values out instead of nesting aliases of aliases",
                )
            continue
        else:
            if kind is events.DocumentStartEvent and out is not None:
                documents += 1
                if documents > 1:
                    raise _NotPlain  # the composer words "expected a single document"
            continue
        if nodes > MAX_NODES:
            raise _limit(event, f"more than {MAX_NODES:,} values in one file", "split the file")
        if nodes > _PLAIN_NODES and out is not None:
            raise _NotPlain  # checked whole first: a refused file builds nothing
    return pending


def _put(out: ParsedYaml, top: list[Any] | None, value: Any, event: Any) -> Path:
    """Place a built value in its collection (the root if none); returns its path."""
    if top is None:
        out.lines[()] = event.start_mark.line + 1
        out.data = value
        return ()
    container = top[0]
    if type(container) is list:
        where = (*top[1], len(container))
        out.lines[where] = event.start_mark.line + 1
        container.append(value)
        return where
    key = top[2]
    container[key] = value
    top[2] = _KEY
    return (*top[1], key)


class _TaskCounter:
    """Counts the items of a top-level ``tasks:`` list as they stream past, so a file with
    too many tasks is refused before any is built."""

    def __init__(self) -> None:
        self.top = 0  # nodes started directly in the top mapping: keys and values alternate
        self.key: str | None = None
        self.open = False
        self.count = 0

    def see(self, event: events.Event, depth: int) -> None:
        if isinstance(event, events.CollectionEndEvent):
            return
        if depth == 1:
            self.top += 1
            if self.top % 2:  # a key
                self.key = event.value if isinstance(event, events.ScalarEvent) else None
            elif self.key == "tasks" and isinstance(event, events.SequenceStartEvent):
                self.open = True
        elif depth == 2 and self.open:
            self.count += 1
            if self.count > MAX_TASKS_PER_FILE:
                raise _limit(
                    event,
                    f"more than {MAX_TASKS_PER_FILE:,} tasks in one file",
                    "split them into several files",
                )


def _check_number(loader: Any, event: events.ScalarEvent) -> None:
    tag = event.tag if event.tag not in (None, "!") else None
    if tag is None and event.implicit[0]:
        tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag in _NUMBER_TAGS:
        raise _limit(
            event,
            f"a number of {len(event.value):,} characters (at most {MAX_NUMBER_CHARS})",
            "write a sensible number; quote it if it is meant as text",
        )


def _limit(event: events.Event, problem: str, fix: str) -> YamlLimitError:
    mark = event.start_mark
    if mark is None:
        return YamlLimitError(problem, None, None, fix)
    return YamlLimitError(problem, mark.line + 1, mark.column + 1, fix)


_STR = "tag:yaml.org,2002:str"
_MERGE_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


def _build(
    loader: yaml.SafeLoader, node: yaml.Node, path: Path, out: ParsedYaml, active: set[int]
) -> Any:
    # Called for each of a file's values (6,000 for 1,000 small tasks): a plain string
    # is taken as it is, and a mapping's merge keys looked for only where one is written.
    if type(node) is yaml.ScalarNode:
        return node.value if node.tag == _STR else _scalar(loader, node)
    if id(node) in active:
        raise YamlSyntaxError("an alias refers to itself", node.start_mark.line + 1, None)
    lines = out.lines
    if type(node) is yaml.MappingNode:
        if any(key_node.tag in _MERGE_TAGS for key_node, _ in node.value):
            loader.flatten_mapping(node)  # resolve "<<: *defaults" merge keys
        active.add(id(node))
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            # Keys are kept as written: "on"/"yes"/"1" must not turn into bools or ints.
            key = key_node.value if type(key_node) is yaml.ScalarNode else "<complex key>"
            where = (*path, key)
            if key in mapping:
                out.duplicates.append((where, line, lines[where]))
            lines[where] = line
            mapping[key] = _build(loader, value_node, where, out, active)
        active.discard(id(node))
        return mapping
    if type(node) is yaml.SequenceNode:
        active.add(id(node))
        items = []
        for index, item in enumerate(node.value):
            where = (*path, index)
            lines[where] = item.start_mark.line + 1
            items.append(_build(loader, item, where, out, active))
        active.discard(id(node))
        return items
    return loader.construct_object(node, deep=True)


def _scalar(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError:
        raise
    except Exception:  # "!!int x": PyYAML's constructors raise ValueError, KeyError...
        tag = node.tag.rsplit(":", 1)[-1]
        mark = node.start_mark
        raise YamlSyntaxError(
            f"{node.value!r} is not a valid !!{tag} value",
            mark.line + 1,
            mark.column + 1,
            f"write a valid {tag}, or remove the tag !!{tag}",
        ) from None


def line_of(lines: dict[Path, int], path: Path) -> int | None:
    """Line of ``path`` or of its nearest written ancestor (a missing key -> its parent)."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)
