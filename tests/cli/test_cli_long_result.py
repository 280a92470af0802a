"""A shell task's result printed as one long line (longer than the 16 KiB pieces the output is
stored in) through the real `tui` command: whole when it fits the window a result is read
from, a clear reason when it does not, never newlines spliced into it."""

from __future__ import annotations

import json

from tests.cli.cli_support import Tui, shell_task, write_tasks
from tui.model.workflow import RESULT_CHARS, RESULT_TAIL_BYTES

# Prints a JSON object of about SIZE bytes on one line.
PRINT = (
    'python3 -c \'import json, sys; n = int(sys.argv[1]) // 100; print(json.dumps({{"n": n, '
    '"items": ["\\u00e9" + "x" * 97] * n}}, ensure_ascii=False))\' {size}'
)


def expected(size: int) -> dict:
    n = size // 100
    return {"n": n, "items": ["é" + "x" * 97] * n}


def test_a_200_kib_json_line_is_the_parsed_result(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "t.yaml",
        [
            {
                **shell_task("big", PRINT.format(size=200 * 1024)),
                "output_format": {"type": "json"},
            },
            # A dependent reaches into it: the value arrived whole.
            shell_task("use", 'echo "n={{needs.big.result.n}}"', depends_on="big"),
        ],
    )
    res = tui("run", str(f), timeout=120)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["big"]["state"] == "COMPLETED", tasks["big"]
    assert tasks["big"]["result"] == expected(200 * 1024)
    assert tasks["use"]["result"] == f"n={200 * 1024 // 100}"
    # The output still holds it in 16 KiB pieces, as the log view shows it.
    pieces = [ln.text for ln in tui.output() if ln.text.startswith(('{"n"', "x", "é"))]
    assert len(pieces) > 10


def test_a_json_line_too_long_for_the_window_fails_saying_so(tui: Tui) -> None:
    size = RESULT_TAIL_BYTES + 300 * 1024
    f = write_tasks(
        tui.dir / "t.yaml",
        {**shell_task("huge", PRINT.format(size=size)), "output_format": {"type": "json"}},
    )
    res = tui("run", str(f), timeout=120)
    assert res.returncode != 0
    (task,) = tui.ls()
    assert task["state"] == "FAILED"
    assert "result is not JSON" in task["reason"]
    assert (
        "the result was cut: a command's last stdout lines are read from its last "
        in (task["reason"])
    )
    assert f"{RESULT_TAIL_BYTES // 1024} KiB" in task["reason"]


def test_a_long_text_result_keeps_its_end_without_newlines_spliced_in(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", shell_task("text", PRINT.format(size=200 * 1024)))
    res = tui("run", str(f), timeout=120)
    assert res.returncode == 0, str(res)
    (task,) = tui.ls()
    result = task["result"]
    whole = json.dumps(expected(200 * 1024), ensure_ascii=False)
    # Over the stored cap: its end, after a leading "…" (README, Results).
    assert result.startswith("…") and len(result) == RESULT_CHARS
    assert whole.endswith(result[1:])
