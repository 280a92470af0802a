"""The store notices its file deleted or replaced under it, and closing saves what it held."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tui.model.task import Task
from tui.store.db import DatabaseFileError, Store


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


async def test_deleted_file_is_noticed_and_written_back_on_close(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = await Store.open(path)
    store.check_file()  # ours
    path.unlink()
    with pytest.raises(DatabaseFileError, match="was deleted"):
        store.check_file()
    await store.insert_tasks([_task("after")], approved=True)  # lands in the deleted file
    await store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = await Store.open(path, create=False)
    assert [r.name for r in await again.list_tasks()] == ["after"]
    await again.close()


async def test_replaced_file_is_kept_and_the_open_one_saved_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = await Store.open(path)
    await store.insert_tasks([_task("old")], approved=True)
    path.unlink()
    other = await Store.open(path)
    await other.insert_tasks([_task("new")], approved=True)
    await other.close()
    with pytest.raises(DatabaseFileError, match="was replaced"):
        store.check_file()
    await store.close()
    (saved,) = tmp_path.glob("t.db.saved-*")
    for p, name in ((path, "new"), (saved, "old")):
        s = await Store.open(p, create=False)
        assert [r.name for r in await s.list_tasks()] == [name]
        await s.close()


async def test_opening_for_reading_never_creates(tmp_path: Path) -> None:
    with pytest.raises(DatabaseFileError, match="no database at"):
        await Store.open(tmp_path / "sub" / "t.db", create=False)
    assert list(tmp_path.iterdir()) == []


async def test_a_reader_leaves_the_path_to_the_store_that_wrote(tmp_path: Path) -> None:
    """A viewer (a `tui run` following the daemon) and the daemon both have the file open
    when it is deleted. The viewer wrote nothing: closing first, it must not take the path
    with its older copy, or the daemon's newer one ends up beside it as `.saved-TIME`."""
    path = tmp_path / "t.db"
    daemon = await Store.open(path)
    await daemon.insert_tasks([_task("before")], approved=True)
    viewer = await Store.open(path, create=False)
    assert [r.name for r in await viewer.list_tasks()] == ["before"]
    path.unlink()
    await daemon.insert_tasks([_task("after")], approved=True)  # in the deleted file only
    await viewer.close()
    assert not path.exists()
    await daemon.insert_tasks([_task("last")], approved=True)  # after the viewer's copy
    await daemon.close()
    restored = await Store.open(path, create=False)
    assert sorted(r.name for r in await restored.list_tasks()) == ["after", "before", "last"]
    await restored.close()
    (beside,) = tmp_path.glob("t.db.saved-*")  # the viewer's own copy, out of the way
    old = await Store.open(beside, create=False)
    assert sorted(r.name for r in await old.list_tasks()) == ["after", "before"]
    await old.close()
