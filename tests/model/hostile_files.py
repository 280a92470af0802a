"""Hostile task files, each built small in memory: what each one did before it was bounded is
in the comment (measured on main before the limits)."""

from __future__ import annotations

TASK = "name: a\nagent: {type: shell, instructions: x}\n"


def billion_laughs() -> str:
    """~450 bytes; expanded 9^9 strings: grew to 7 GB."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\n"


def merge_bomb() -> str:
    """Merge keys doubling a mapping 30 times: hung."""
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}]}}" for i in range(1, 30)]
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, str] = {
    "billion-laughs": billion_laughs(),
    "merge-bomb": merge_bomb(),
    # segfault (rc 139)
    "flow-nesting-50000": "a: " + "[" * 50_000 + "]" * 50_000 + "\n",
    # RecursionError
    "flow-nesting-1000": "a: " + "[" * 1000 + "]" * 1000 + "\n",
    "block-nesting-1000": "".join("  " * i + f"k{i}:\n" for i in range(1000))
    + "  " * 1000
    + "x: 1\n",
    # OverflowError / ValueError (Python's int-string limit)
    "timeout-400-digits": "name: a\ntimeout: "
    + "9" * 400
    + "\nagent: {type: shell, instructions: x}\n",
    "int-5000-digits": "name: a\ntags: ["
    + "9" * 5000
    + "]\nagent: {type: shell, instructions: x}\n",
    "self-merge": "a: &a {<<: *a}\n",
    "many-aliases": "x: &x 1\nl: [" + ",".join(["*x"] * 20_001) + "]\n",
    "many-values": "l: [" + ",".join(["1"] * 500_001) + "]\n",
    "many-tasks": "tasks:\n" + "- {name: t, agent: {instructions: x}}\n" * 10_001,
}

# What each one's error says (besides the file name and line).
EXPECTED: dict[str, str] = {
    "billion-laughs": "an alias bomb",
    "merge-bomb": "an alias bomb",
    "flow-nesting-50000": "nested more than 64 levels",
    "flow-nesting-1000": "nested more than 64 levels",
    "block-nesting-1000": "nested more than 64 levels",
    "timeout-400-digits": "a number of 400 characters",
    "int-5000-digits": "a number of 5,000 characters",
    "self-merge": "refers to itself",
    "many-aliases": "more than 20,000 aliases",
    "many-values": "more than 500,000 values",
    "many-tasks": "more than 10,000 tasks in one file",
}
