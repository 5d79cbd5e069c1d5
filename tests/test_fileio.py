"""Atomic writes: several files together or none, errors naming the user's path, JSON."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from lumoscore import fileio
from lumoscore.errors import ConfigError
from lumoscore.fileio import atomic_write, atomic_write_files, atomic_write_text, json_text


def test_several_files_are_written_together(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    paths = atomic_write_files({tmp_path / "a.txt": "new", tmp_path / "b.bin": b"\x00\x01"})
    assert paths == [tmp_path / "a.txt", tmp_path / "b.bin"]
    assert (tmp_path / "a.txt").read_text() == "new"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]


def test_a_failed_write_leaves_every_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second content fails to write (a full disk): the first target keeps its old
    content, and no temporary file is left."""
    (tmp_path / "a.txt").write_text("old")
    real = Path.write_bytes
    calls = []

    def full_disk(self: Path, data: bytes) -> int:
        calls.append(self)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(OSError, match="No space left") as info:
        atomic_write_files({tmp_path / "a.txt": "new", tmp_path / "b.txt": "B"})
    assert info.value.filename == str(tmp_path / "b.txt")  # the user's path, not the temporary
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "old"


def test_an_os_error_on_the_temporary_file_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder: the error names the file the user gave (not `.x.csv.1a2b.tmp`)."""

    def read_only(path: os.PathLike[str], *args: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    monkeypatch.setattr(fileio.os, "open", read_only)
    for write in (
        lambda p: atomic_write_text(p, "x"),
        lambda p: atomic_write_files({p: "x"}),
        lambda p: atomic_write(p, lambda tmp: tmp.write_text("x")),
    ):
        with pytest.raises(PermissionError) as info:
            write(tmp_path / "x.csv")
        assert info.value.filename == str(tmp_path / "x.csv")
    assert list(tmp_path.iterdir()) == []


def test_an_error_about_another_file_is_left_alone(tmp_path: Path) -> None:
    def reads_a_missing_file(tmp: Path) -> None:
        (tmp_path / "missing.txt").read_text()

    with pytest.raises(FileNotFoundError) as info:
        atomic_write(tmp_path / "out.txt", reads_a_missing_file)
    assert info.value.filename == str(tmp_path / "missing.txt")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_in_the_way_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "b.txt").mkdir()
    with pytest.raises(ConfigError, match=r"b\.txt: is a directory"):
        atomic_write_files({tmp_path / "a.txt": "A", tmp_path / "b.txt": "B"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"]


def test_json_text_is_standard_json() -> None:
    doc = {"nan": math.nan, "inf": [math.inf, -math.inf], "n": np.int64(3), "x": np.float32(0.5)}
    text = json_text(doc)
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"nan": None, "inf": [None, None], "n": 3, "x": 0.5}
