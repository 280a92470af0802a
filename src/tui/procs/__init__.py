"""Child processes, below every other layer: spawn in a process group of its own, identify by
(pid, start time), end a whole group, split output bytes into lines. Used by the engine, the
agents and the config; imports nothing else of tui's."""
