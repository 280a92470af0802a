"""The named system prompt parts a task's ``system:`` may use: config's ``[contexts.NAME]``
tables, read only when a task names one (tui.model.loader's ``parts``)."""

from __future__ import annotations

from pathlib import Path

from tui.config.load import ConfigError


def named_parts() -> dict[str, str]:
    """The parts of the current project's config (the loader's ``parts`` source)."""
    return config_parts()


def config_parts(project_dir: Path | None = None) -> dict[str, str]:
    """Each context's text: its ``prompt``, else its ``file``'s contents (a ``command``'s
    output is not used: a task file is checked without running anything)."""
    # Here, not at the top: every `tui run` imports this module, and reads only [settings]
    # (tui.config.load) unless a task names a system part.
    from tui.config.merged import load_config

    try:
        config = load_config(project_dir)
    except ConfigError as e:
        first = e.issues[0] if e.issues else None
        raise ValueError(f"the config has errors ({first})" if first else str(e)) from None
    parts: dict[str, str] = {}
    for name, item in config.contexts.items():
        src = item.model
        if src.prompt is not None:
            parts[name] = src.prompt
        elif src.file:
            from tui.config.render import source_path  # commands, placeholders: rarely needed

            path = source_path(src, config.project_dir)
            try:
                parts[name] = path.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise ValueError(f"[contexts.{name}] file {path}: {e.strerror}") from None
    return parts
