"""The test processes' libraries in the runtime-libraries check: read from a test result the
isolate writer produced, joined with an import snapshot (each library once, with where it was
seen), two copies of a runtime only when one process held both, and the baseline compared on
the imported libraries alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from xcompat.contracts import libraries
from xcompat.contracts.compare import compare_snapshots
from xcompat.contracts.maps import parse_maps
from xcompat.contracts.owners import OwnerIndex
from xcompat.contracts.test_maps import TestMaps, read_test_maps
from xcompat.errors import InputError
from xcompat.isolate.outcomes import RunResult, TestRecord
from xcompat.isolate.writers import write_json_result
from xcompat.jsonio import validate

LINE = "7f0000000000-7f0000001000 r-xp 00000000 08:01 {inode} {path}\n"


def _test_result(path: Path, mapped: dict[str, object] | None, isolation: str = "test") -> Path:
    result = RunResult(records=(TestRecord(nodeid="t.py::test_a", outcome="passed"),), isolation=isolation,  # type: ignore[arg-type]
                       start_method="fork", timeout_s=None, duration_s=1.0, mapped_libraries=mapped)
    return write_json_result(path, result)


def snapshot(*args: Any, **kwargs: Any) -> Any:
    return libraries.snapshot(*args, **kwargs)


def _maps(*paths: str) -> str:
    return "".join(LINE.format(inode=i + 1, path=p) for i, p in enumerate(paths))


def test_the_writer_keeps_the_field_optional_and_the_reader_takes_it_back(tmp_path: Path) -> None:
    mapped = {"processes": 3, "unread": 1, "common": ["/usr/lib/libc.so.6"],
              "added": [["/tmp/x/libplanted.so"], ["/opt/y/libother.so"]]}
    found = read_test_maps(_test_result(tmp_path / "test.json", mapped))
    assert isinstance(found, TestMaps)
    assert found.views == (frozenset({"/usr/lib/libc.so.6"}),
                           frozenset({"/usr/lib/libc.so.6", "/tmp/x/libplanted.so"}),
                           frozenset({"/usr/lib/libc.so.6", "/opt/y/libother.so"}))
    assert found.describe() == "3 test processes at their end (isolation test); 1 over the size limit, not read"
    plain = _test_result(tmp_path / "plain.json", None)
    assert "mapped_libraries" not in plain.read_text()
    assert "has no mapped_libraries" in str(read_test_maps(plain))
    none = read_test_maps(_test_result(tmp_path / "none.json", {**mapped, "processes": 0}))
    assert isinstance(none, str) and "no test process was read" in none


def test_a_malformed_field_is_refused_by_the_schema(tmp_path: Path) -> None:
    path = _test_result(tmp_path / "test.json", {"processes": 1, "unread": 0, "common": [], "added": []})
    path.write_text(path.read_text().replace('"added": []', '"added": "everything"'))
    with pytest.raises(InputError, match="test.json"):
        read_test_maps(path)


def _owners(tmp_path: Path) -> OwnerIndex:
    return OwnerIndex([str(tmp_path / "site")], [], None)


def _files(tmp_path: Path, *names: str) -> list[str]:
    """Files named like the libraries (not ELF: their SONAME and build ID read as unknown)."""
    paths = []
    for name in names:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not elf")
        paths.append(str(path))
    return paths


def test_a_library_only_a_test_process_mapped_is_a_finding_marked_as_such(tmp_path: Path) -> None:
    core, planted = _files(tmp_path, "site/pkg/_core.so", "elsewhere/libplanted.so")
    imported = parse_maps(_maps(core))
    assert snapshot(imported, _owners(tmp_path))["findings"] == []
    tests = TestMaps(2, 0, "test", (frozenset({core}), frozenset({core, planted})))
    doc = snapshot(imported, _owners(tmp_path), tests=tests)
    assert [(f["code"], f["path"]) for f in doc["findings"]] == [("library-outside", planted)]
    assert "by a test process" in doc["findings"][0]["message"]
    seen = {lib["path"]: lib["seen_in"] for lib in doc["libraries"]}
    assert seen == {core: ["import", "tests"], planted: ["tests"]}
    validate("contracts-runtime-libraries", doc)


def test_two_runtimes_count_only_when_one_process_held_both(tmp_path: Path) -> None:
    core, gomp, iomp = _files(tmp_path, "site/pkg/_core.so", "site/a/libgomp.so.1", "site/b/libiomp5.so")
    imported = parse_maps(_maps(core, gomp))
    apart = TestMaps(2, 0, "test", (frozenset({core}), frozenset({core, iomp})))
    assert snapshot(imported, _owners(tmp_path), tests=apart)["findings"] == []
    together = dataclasses.replace(apart, views=(*apart.views, frozenset({core, gomp, iomp})))
    findings = snapshot(imported, _owners(tmp_path), tests=together)["findings"]
    assert [(f["code"], f["family"]) for f in findings] == [("duplicate-runtime", "OpenMP")]


def test_the_baseline_is_compared_on_the_imported_libraries_only() -> None:
    old = {"libraries": [{"path": "/s/pkg/_core.so", "soname": None, "owner": "project"}]}
    new = {"libraries": [{"path": "/s/pkg/_core.so", "soname": None, "owner": "project", "seen_in": ["import", "tests"]},
                         {"path": "/tmp/libplanted.so", "soname": None, "owner": "outside", "seen_in": ["tests"]},
                         {"path": "/s/pkg/_new.so", "soname": None, "owner": "project", "seen_in": ["import"]}]}
    assert [(c["change"], c["library"]) for c in compare_snapshots(old, new)] == [("added", "_new.so")]
