"""A results folder is bounded: too many result files is a one-line input error, not a slow crawl."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from xcompat import limits
from xcompat.errors import InputError
from xcompat.results import collect


def _write_results(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"r{i:03d}.json").write_text(json.dumps({"kind": "nothing-we-read", "n": i}))


def test_more_result_files_than_the_limit_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "LIMITS", dataclasses.replace(limits.LIMITS, result_files=5))
    _write_results(tmp_path / "results", 6)
    with pytest.raises(InputError, match="more than 5 result files") as exc:
        collect.load_results([tmp_path / "results"])
    assert exc.value.exit_code == 2 and exc.value.file == str(tmp_path / "results")


def test_up_to_the_limit_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "LIMITS", dataclasses.replace(limits.LIMITS, result_files=5))
    _write_results(tmp_path / "results", 5)
    loaded = collect.load_results([tmp_path / "results"])
    assert len(loaded.skipped_files) == 5 and loaded.results == ()


def test_the_byte_budget_counts_across_files(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "LIMITS", dataclasses.replace(limits.LIMITS, result_total_bytes=100))
    _write_results(tmp_path / "results", 10)  # ~35 bytes each
    with pytest.raises(InputError, match="of results under this folder"):
        collect.load_results([tmp_path / "results"])
