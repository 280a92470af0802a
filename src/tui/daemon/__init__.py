"""The scheduler daemon: one process per database owns the engine and every agent process;
the app and the CLI are viewers that attach over a Unix socket and may come and go."""
