from __future__ import annotations

import json

import pytest

from xcompat.coverage.native import gcovr_root, native_files, read_gcovr_json
from xcompat.errors import InputError


def test_gcovr_root_prefers_source_root_then_project_marker(tmp_path):
    repo = tmp_path / "repo"
    (repo / "build" / "temp").mkdir(parents=True)
    assert gcovr_root(repo / "build" / "temp", repo) == repo
    pip_copy = tmp_path / "pip-req-build-x"
    (pip_copy / "build" / "temp").mkdir(parents=True)
    (pip_copy / "setup.py").write_text("")
    assert gcovr_root(pip_copy / "build" / "temp", repo) == pip_copy
    lonely = tmp_path / "lonely" / "objs"
    lonely.mkdir(parents=True)
    assert gcovr_root(lonely, repo) == lonely


def test_native_files_sums_duplicate_lines_and_skips_excluded():
    doc = {
        "files": [
            {
                "file": "a.cpp",
                "lines": [
                    {"line_number": 3, "count": 2},
                    {"line_number": 3, "count": 5},  # two template instances
                    {"line_number": 4, "count": 0, "gcovr/excluded": True},
                    {"line_number": 5, "count": 0},
                ],
            }
        ]
    }
    (f,) = native_files(doc)
    assert f.recorded == "a.cpp" and f.lines == {3: 7, 5: 0}


@pytest.mark.parametrize(
    "bad",
    [
        {"files": [{"lines": []}]},
        {"files": [{"file": "a.c", "lines": [{"count": 1}]}]},
        {"files": [{"file": "a.c", "lines": [{"line_number": "x", "count": 1}]}]},
    ],
)
def test_malformed_gcovr_document(bad):
    with pytest.raises(InputError) as info:
        list(native_files(bad, source="cell.json"))
    assert "files[0]" in info.value.message and info.value.file == "cell.json"


@pytest.mark.parametrize("text", ['{"files": [', '{"nofiles": 1}', "[]"])
def test_malformed_gcovr_file(tmp_path, text):
    path = tmp_path / "g.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_gcovr_json(path)
    assert info.value.file == str(path)


def test_real_gcovr_shape_round_trip(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(
        json.dumps(
            {
                "gcovr/format_version": "0.15",
                "files": [
                    {
                        "file": "src/x.c",
                        "functions": [],
                        "lines": [{"line_number": 1, "count": 1, "branches": []}],
                    }
                ],
            }
        )
    )
    (f,) = native_files(read_gcovr_json(path))
    assert f.lines == {1: 1}
