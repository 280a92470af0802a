"""User configuration: global and project ``config.toml`` (settings, agents, roles, contexts,
task templates), placeholders, and turning a template into a Task."""
