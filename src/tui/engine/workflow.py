"""What a task takes from its dependencies when it comes to run.

``needs_of`` is the view of a task's dependencies that templates and conditions read:
``{name: {id, name, state, result, error}}`` (by name and by id). ``prepare`` makes the task as
this run sees it: ``{{needs...}}`` filled in a prompt; for a script (shell, Taskfile) each one
becomes a reference to an environment variable holding the value, never the value itself;
with ``context:``, the dependencies' results in a block before the prompt and, for every kind,
in a JSON file named by ``$TUI_CONTEXT_FILE``. Everything is read from the stored records, so
a run after a crash sees exactly what the first one would have.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tui.model.agent_kinds import KINDS
from tui.model.needs import NEEDS_USE, NeedsRef, template_refs
from tui.model.states import SATISFIED
from tui.model.task import Task
from tui.model.workflow import ContextSpec, Transfer
from tui.store.records import TaskRecord

ENV_CONTEXT_FILE = "TUI_CONTEXT_FILE"
# Linux refuses a single environment string past 128 KiB (MAX_ARG_STRLEN): a larger value is
# an error naming the file that has it whole, not a run that cannot start.
ENV_VALUE_MAX = 100 * 1024


class WorkflowError(Exception):
    """A template or condition cannot be evaluated for this run (said to the user as is)."""


def dependency_view(rec: TaskRecord) -> dict[str, Any]:
    try:
        result = rec.parsed_result
    except ValueError:  # stored before results were JSON: the text itself
        result = rec.result
    return {
        "id": rec.id,
        "name": rec.name,
        "state": rec.state.value,
        "result": result,
        "error": "" if rec.state in SATISFIED else rec.reason,
    }


def needs_of(
    rec: TaskRecord, lookup: Callable[[str], TaskRecord | None]
) -> dict[str, dict[str, Any]]:
    """Each dependency's view, under its name and under its id."""
    out: dict[str, dict[str, Any]] = {}
    for dep_id in rec.depends_on:
        dep = lookup(dep_id)
        if dep is not None:
            view = dependency_view(dep)
            out.setdefault(dep.name, view)
            out[dep.id] = view
    return out


def value_of(needs: dict[str, dict[str, Any]], ref: NeedsRef) -> Any:
    dep = needs.get(ref.name)
    if dep is None:
        raise WorkflowError(f"{ref.text}: no dependency named {ref.name!r}")
    value = dep.get(ref.field)
    walked = f"needs.{ref.name}.{ref.field}"
    for key in ref.keys:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise WorkflowError(f"{ref.text}: {walked} has no {key!r} ({_shape(value)})")
        walked += f".{key}"
    return value


def as_text(value: Any) -> str:
    """A value as a prompt or an environment variable carries it: text as is, else JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)


def env_value(ref: NeedsRef, value: Any) -> str:
    text = as_text(value).replace("\0", "")  # the one character no variable can hold
    if len(text.encode()) > ENV_VALUE_MAX:
        raise WorkflowError(
            f"{ref.text} is {len(text.encode()) // 1024} KiB, too big for an environment "
            f"variable (at most {ENV_VALUE_MAX // 1024} KiB); add `context: {{from: "
            f"[{ref.name}]}}` and read it from the JSON file named by ${ENV_CONTEXT_FILE}"
        )
    return text


def env_name(ref: NeedsRef) -> str:
    parts = [ref.name, ref.field, *ref.keys]
    return "TUI_NEEDS_" + "_".join(re.sub(r"[^A-Za-z0-9]", "_", p).upper() for p in parts)


@dataclass
class Prepared:
    """The task record as one run sees it, and what to remove once the run is over."""

    rec: TaskRecord
    files: list[str] = field(default_factory=list)
    # {upstream id: its summary as JSON} made for this run, to keep with the upstream task.
    summaries: dict[str, str] = field(default_factory=dict)

    def cleanup(self) -> None:
        for path in self.files:
            with contextlib.suppress(OSError):
                os.unlink(path)


def prepare(rec: TaskRecord, lookup: Callable[[str], TaskRecord | None]) -> Prepared:
    """The task for this run (see the module docstring); ``rec`` itself is never changed.
    Raises WorkflowError naming what cannot be filled."""
    task = rec.task
    agent = task.agent
    if task.classifies:
        return _classifier_run(rec, lookup)
    if task.context is None and not (
        NEEDS_USE.search(agent.instructions) or NEEDS_USE.search(agent.system_prompt_append)
    ):
        return Prepared(rec)  # the usual run: nothing to fill in
    needs = needs_of(rec, lookup)
    script = KINDS[agent.type].script if agent.type in KINDS else False
    env: dict[str, str] = {}
    changes: dict[str, str] = {}
    for key in ("instructions", "system_prompt_append"):
        text = getattr(agent, key)
        if not NEEDS_USE.search(text):
            continue
        if script:
            for ref in template_refs(text):
                env[env_name(ref)] = env_value(ref, value_of(needs, ref))
            changes[key] = NEEDS_USE.sub(lambda m: "${" + env_name(_ref(m.group(0))) + "}", text)
        else:
            changes[key] = NEEDS_USE.sub(lambda m: as_text(value_of(needs, _ref(m.group(0)))), text)
    prepared = Prepared(rec)
    if task.context is not None:
        views = _transferred(task.context, rec, needs, lookup)
        prepared.summaries = {
            v["id"]: json.dumps(v["summary_sizes"]) for v in views.values() if "summary_sizes" in v
        }
        for view in views.values():
            view.pop("summary_sizes", None)
        for name, view in views.items():
            prefix = "TUI_NEEDS_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
            env[f"{prefix}_STATE"] = view["state"]
        fd, path = tempfile.mkstemp(prefix="tui-context-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(views, f, ensure_ascii=False)
        prepared.files.append(path)
        env[ENV_CONTEXT_FILE] = path
        if not script:
            block = context_block(views)
            changes["instructions"] = (
                f"{block}\n\n{changes.get('instructions', agent.instructions)}"
            )
    new_agent = agent.model_copy(update={**changes, "env": {**agent.env, **env}})
    new_task: Task = task.model_copy(update={"agent": new_agent})
    prepared.rec = replace(rec, spec=new_task)
    return prepared


def _classifier_run(rec: TaskRecord, lookup: Callable[[str], TaskRecord | None]) -> Prepared:
    """A classifier task's run: the task it classifies described before its prompt and, for
    every kind, in the JSON file named by $TUI_CONTEXT_FILE (``{"task": {...}}``)."""
    # Imported by classifier tasks alone: a plain run never loads it.
    from tui.engine.classifying import block, describe

    target = lookup(rec.task.classifies)
    if target is None:
        raise WorkflowError(f"the task it classifies ({rec.task.classifies}) is not stored")
    agent = rec.task.agent
    fd, path = tempfile.mkstemp(prefix="tui-classify-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"task": describe(target.task)}, f, ensure_ascii=False)
    changes: dict[str, Any] = {"env": {**agent.env, ENV_CONTEXT_FILE: path}}
    if not (KINDS[agent.type].script if agent.type in KINDS else False):
        changes["instructions"] = f"{block(target.task)}\n\n{agent.instructions}"
    new_task = rec.task.model_copy(update={"agent": agent.model_copy(update=changes)})
    return Prepared(replace(rec, spec=new_task), files=[path])


def _ref(text: str) -> NeedsRef:
    return template_refs(text)[0]


def _transferred(
    spec: ContextSpec,
    rec: TaskRecord,
    needs: dict[str, dict[str, Any]],
    lookup: Callable[[str], TaskRecord | None],
) -> dict[str, dict[str, Any]]:
    """{name: what is transferred of it}, for the dependencies ``context.from`` names
    (never the summariser or compaction tasks the loader added: their results come as the
    summaries and compacted results)."""
    # Imported by ``context:`` transfers alone: a plain run never loads it.
    from tui.engine.summaries import compacted, summarize

    summarizers: dict[str, TaskRecord] = {}
    compactors: dict[str, TaskRecord] = {}
    added: set[str] = set()  # the tasks the loader added: never transferred themselves
    for dep_id in rec.depends_on:
        dep = lookup(dep_id)
        if dep is not None and dep.task.summarizes:
            summarizers[dep.task.summarizes] = dep
        elif dep is not None and dep.task.compacts:
            compactors[dep.task.compacts] = dep
        if dep is not None and (dep.task.summarizes or dep.task.compacts or dep.task.classifies):
            added.add(dep.id)
    if spec.from_ == "all":
        chosen = [needs[d] for d in rec.depends_on if d in needs and d not in added]
    else:
        chosen = [needs[n] for n in spec.from_ if n in needs]
    out: dict[str, dict[str, Any]] = {}
    for view in chosen:
        shown: dict[str, Any] = {"id": view["id"], "state": view["state"]}
        if spec.transfer == Transfer.SUMMARY:
            made = summarize(view, rec.task.summarizer, summarizers.get(view["id"]))
            shown["summary"] = preserved(made["summary"], spec.preserve)
            shown["summary_sizes"] = made  # taken off by prepare(), kept with the upstream
        elif spec.transfer == Transfer.FULL:
            if "outputs" in spec.preserve:
                made_c = compacted(view, compactors.get(view["id"]))
                if made_c is None:
                    shown["result"] = view["result"]
                else:
                    shown["result"] = preserved(made_c["summary"], spec.preserve)
                    shown["compacted"] = {k: made_c[k] for k in ("size_before", "size_after", "by")}
                    shown["summary_sizes"] = made_c
            if "errors" in spec.preserve and view["error"]:
                shown["error"] = view["error"]
        out[view["name"]] = shown
    return out


# Which parts of a summariser's answer each `context.preserve` item keeps (`summary` always).
PRESERVED_FIELDS = {"outputs": "key_outputs", "decisions": "decisions", "errors": "errors"}


def preserved(summary: Any, preserve: list[str]) -> Any:
    """A summariser's answer with only the parts ``preserve`` names (the one-line summary of
    the aggressive strategy, or an answer that is not the object, as it is)."""
    if not isinstance(summary, dict):
        return summary
    dropped = {f for item, f in PRESERVED_FIELDS.items() if item not in preserve}
    return {k: v for k, v in summary.items() if k not in dropped}


def context_block(views: dict[str, dict[str, Any]]) -> str:
    """The block placed before a prompt (documented in the README's task-file section)."""
    lines = ["<upstream_results>"]
    for name, view in views.items():
        head = f'<task name="{_attr(name)}" state="{view["state"]}"'
        parts = []
        if view.get("summary"):
            parts.append(f"<summary>{as_text(view['summary'])}</summary>")
        if "result" in view and view["result"] is not None:
            sizes = view.get("compacted")
            attrs = (
                f' compacted_from="{sizes["size_before"]}" compacted_to="{sizes["size_after"]}"'
                if sizes
                else ""
            )
            parts.append(f"<result{attrs}>\n{as_text(view['result'])}\n</result>")
        if view.get("error"):
            parts.append(f"<error>{view['error']}</error>")
        lines += [f"{head}>", *parts, "</task>"] if parts else [f"{head}/>"]
    lines.append("</upstream_results>")
    return "\n".join(lines)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(list(value)[:8])
        return f"its keys: {keys}" if keys else "it is an empty object"
    if isinstance(value, list):
        return f"it is a list of {len(value)}"
    return f"it is {json.dumps(value)[:40]}"
