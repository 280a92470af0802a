"""tui's own MCP server: the tools every agent run gets (ask_user, run_user_task...)."""
