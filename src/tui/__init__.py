"""tui: a terminal cockpit for coding-agent tasks."""

__version__ = "0.1.0"
