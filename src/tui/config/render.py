"""A role's, context's or template's text: its prompt with placeholders filled in, or (with no
prompt) its file's contents and its command's output."""

from __future__ import annotations

import datetime
from pathlib import Path

from tui.config import placeholders
from tui.config.commands import run_command
from tui.config.load import Origin
from tui.config.schema import DEFAULT_SHELL, Settings, Source
from tui.model.issues import TaskFileError

NO_INSTRUCTIONS = "None"  # what {instructions} says when the user typed nothing


def source_path(src: Source, origin: Origin) -> Path:
    """``file`` with ~ expanded; relative to the project (local) or the config dir (global)."""
    path = Path(src.file).expanduser()
    return path if path.is_absolute() else (origin.base / path).absolute()


async def render(
    src: Source,
    origin: Origin,
    section: str,
    name: str,
    *,
    instructions: str,
    settings: Settings,
    cwd: Path,
    append_instructions: bool = False,
    variables: dict[str, str] | None = None,
) -> str:
    """The text of ``src``, the [section.name] table of ``origin``.
    ``append_instructions``: a template without a prompt ends with the user's text."""

    def fail(field: str, message: str, fix: str) -> TaskFileError:
        return TaskFileError([origin.issue(section, name, field, message, fix)])

    def contents() -> str:
        path = source_path(src, origin)
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            reason = e.strerror or type(e).__name__
            raise fail("file", f"cannot read {path}: {reason}", "fix the path") from None

    async def output() -> str:
        shell = src.shell or settings.shell or DEFAULT_SHELL
        timeout = src.command_timeout if src.command_timeout is not None else None
        timeout = settings.command_timeout if timeout is None else timeout
        try:
            result = await run_command(src.command, shell=shell, timeout=timeout, cwd=str(cwd))
        except OSError as e:
            err = fail("shell", f"cannot start {shell!r}: {e.strerror}", "set an installed shell")
            raise err from None
        if result.exit_code is None:
            raise fail(
                "command",
                f"command still running after {timeout:g}s; it was stopped",
                "make it faster, or raise command_timeout",
            )
        if result.exit_code != 0:
            tail = result.output.strip().splitlines()[-3:]
            said = f": {' / '.join(tail)}" if tail else ""
            raise fail(
                "command",
                f"command exited with {result.exit_code}{said}",
                f"make `{shell} -c <command>` succeed in {cwd}",
            )
        return result.output.removesuffix("\n")

    if src.prompt is None:
        parts = [contents() if src.file else "", await output() if src.command else ""]
        if append_instructions:
            parts.append(instructions)
        return "\n\n".join(p for p in parts if p)
    need = placeholders.used(src.prompt)
    values: dict[str, str] = {
        "instructions": instructions or NO_INSTRUCTIONS,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": src.command,
    }
    if src.file:
        values["file"] = str(source_path(src, origin))
    if "file_contents" in need:
        values["file_contents"] = contents()
    if "command_output" in need:
        values["command_output"] = await output()
    return placeholders.substitute(src.prompt, values, variables)
