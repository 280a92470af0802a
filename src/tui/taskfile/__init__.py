"""Taskfile tasks: the project's `.agent/Taskfile.yml`, driven by the real go-task binary.
``listing``: finding the Taskfile and its tasks; ``running``: running one (argv, prompts,
a tui Task, a captured run)."""
