"""Every app command defined once: its key, footer label, palette title and help text.

The bindings, the footer, the command palette and the help screen are all generated from
``COMMANDS``, and users remap keys by command id (``[settings.keys]`` in the config).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Command:
    id: str  # also the action name: app.action_<id>
    key: str  # default key(s), comma separated
    title: str  # command palette entry
    help: str
    footer: str = ""  # short footer label; empty = not shown in the footer


COMMANDS: tuple[Command, ...] = (
    Command("answer", "a", "Answer next question", "Jump to the oldest open question", "Answer"),
    Command("approve_task", "p", "Approve task", "Let the selected pending task run", "Approve"),
    Command(
        "cancel_task",
        "c",
        "Cancel task",
        "Cancel the selected task, killing its processes",
        "Cancel",
    ),
    Command(
        "retry_task",
        "r",
        "Retry task",
        "Queue the selected failed, timed-out, over-budget, cancelled or skipped task again",
        "Retry",
    ),
    Command("accept_task", "y", "Accept review", "Accept the selected task's result"),
    Command("reject_task", "x", "Reject review", "Send the selected task back with a comment"),
    Command("open_file", "o", "Open task file…", "Submit the tasks of a YAML file or folder"),
    Command(
        "run_template",
        "T",
        "Run template…",
        "Pick a template from config.toml, type instructions, run it",
    ),
    Command(
        "filter",
        "colon",
        "Filter tasks…",
        "Filter by text, state:NAME (as shown: done, failed, running…), tag:NAME or project:NAME",
    ),
    Command("cycle_sort", "s", "Sort tasks", "Cycle: submitted, state, name, priority"),
    Command(
        "search_log",
        "slash",
        "Find…",
        "In the task list: filter it (as : does); in the output: search it (n / N move)",
        "Find",
    ),
    Command(
        "toggle_subtasks",
        "space",
        "Fold/unfold subtasks",
        "Fold the selected task's subtasks into its row (▸), or show them again (▾); the DAG"
        " follows",
        "Fold",
    ),
    Command(
        "expand_subtasks",
        "right",
        "Unfold subtasks",
        "In the task list: show the selected task's subtasks (shown already: go to the first)",
    ),
    Command(
        "collapse_subtasks",
        "left",
        "Fold subtasks",
        "In the task list: fold the selected task's subtasks (on a subtask: go to its parent)",
    ),
    Command("fold_all", "minus", "Fold every parent", "Fold the subtasks of every task"),
    Command("unfold_all", "plus", "Unfold every parent", "Show every task's subtasks"),
    Command("toggle_follow", "f", "Toggle follow", "Keep the output at its newest line"),
    Command("toggle_wrap", "w", "Toggle wrap", "Wrap long output lines"),
    Command("zoom", "z", "Full-screen output", "Show only the output (again to go back)"),
    Command("show_output", "1", "Show output", "The selected task's output"),
    Command("show_dag", "2", "Show DAG", "The dependency graph"),
    Command("show_questions", "3", "Show questions", "Every open question"),
    Command(
        "message_task",
        "m",
        "Message the agent…",
        "Running claude task: send it a message; finished claude/codex/gemini task: continue"
        " its session with one",
    ),
    Command("show_changes", "4", "Show changes", "The selected worktree task's files and diff"),
    Command(
        "merge_task",
        "M",
        "Merge worktree",
        "Merge the selected task's branch into its base branch (a conflict changes nothing)",
    ),
    Command(
        "discard_task",
        "D",
        "Discard worktree…",
        "Delete the selected task's worktree and branch (asks first)",
    ),
    Command(
        "copy_worktree_path", "C", "Copy worktree path", "Copy the selected task's worktree path"
    ),
    Command(
        "focus_left",
        "h",
        "Focus task list",
        "Back to the task list (from the output once scrolled fully left; from the DAG past"
        " its leftmost box)",
    ),
    Command("focus_right", "l", "Focus right pane", "Move focus to the output / DAG / questions"),
    Command("pick_theme", "t", "Switch theme…", "Choose a colour theme (remembered)"),
    Command("help", "question_mark", "Help", "Every key binding", "Help"),
    Command(
        "quit",
        "q",
        "Quit",
        "Leave tui (the daemon keeps tasks running; with --foreground they stop)",
        "Quit",
    ),
)

BY_ID = {c.id: c for c in COMMANDS}


def bindings(keymap: Mapping[str, str] | None = None) -> list[Binding]:
    """Bindings for the app, with keys remapped by command id."""
    keymap = keymap or {}
    return [
        Binding(keymap.get(c.id, c.key), c.id, c.footer or c.title, show=bool(c.footer), id=c.id)
        for c in COMMANDS
    ]


def unknown_ids(keymap: Mapping[str, str]) -> Iterable[str]:
    return (k for k in keymap if k not in BY_ID)
