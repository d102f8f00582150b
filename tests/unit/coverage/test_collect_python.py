"""collect with coverage.py data written through coverage's own API (no compiler needed)."""

from __future__ import annotations

import json

import pytest
from tests.helpers.coverage import run_xcompat_in_process

from xcompat.coverage.collect import CollectOptions, cell_to_document, collect
from xcompat.jsonio import validate

MOD = "def f(x):\n    if x:\n        return 1\n    return 2  # pragma: no cover\n\n\ndef g():\n    return 3\n"


@pytest.fixture
def project(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "mod.py").write_text(MOD)
    (repo / "src" / "pkg" / "__init__.py").write_text("")
    installed = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "pkg"
    installed.mkdir(parents=True)
    (installed / "mod.py").write_text(MOD)
    return repo, installed


def write_data(path, lines, tracers=None):
    from coverage import CoverageData

    data = CoverageData(basename=str(path))
    data.add_lines(lines)
    if tracers:
        data.add_file_tracers(tracers)
    data.write()
    return path


def test_site_packages_data_maps_to_repo_with_exclusions(project, tmp_path):
    repo, installed = project
    data = write_data(tmp_path / ".coverage.1", {str(installed / "mod.py"): [1, 2, 3]})
    # the second parallel file measured the checkout directly
    data2 = write_data(tmp_path / ".coverage.2", {str(repo / "src" / "pkg" / "mod.py"): [7, 8]})
    cell = collect(CollectOptions(cell_id="c1", source_root=repo, python_data=(data, data2)))
    (f,) = cell.files
    assert f.path == "src/pkg/mod.py" and f.language == "python" and f.origin == "coverage.py"
    assert f.lines == (1, 2, 3, 7, 8)  # line 4 is excluded by the pragma
    assert f.hits == (1, 1, 1, 1, 1)
    doc = cell_to_document(cell)
    validate("coverage-cell", doc)
    assert doc["status"] == "passed" and doc["cell_id"] == "c1"


def test_source_missing_at_recorded_path_uses_repo_copy(project, tmp_path):
    repo, _ = project
    data = write_data(tmp_path / ".coverage", {"/gone/site-packages/pkg/mod.py": [1, 7]})
    cell = collect(CollectOptions(cell_id=None, source_root=repo, python_data=(data,)))
    (f,) = cell.files
    assert f.lines == (1, 2, 3, 7, 8) and f.hits == (1, 0, 0, 1, 0)


def test_unmapped_files_are_listed(project, tmp_path):
    repo, installed = project
    other = tmp_path / "elsewhere" / "thing.py"
    other.parent.mkdir()
    other.write_text("x = 1\n")
    data = write_data(tmp_path / ".coverage", {str(other): [1], str(installed / "mod.py"): [1]})
    cell = collect(CollectOptions(cell_id=None, source_root=repo, python_data=(data,)))
    assert [f.path for f in cell.files] == ["src/pkg/mod.py"]
    assert cell.unmapped_total == 1 and cell.unmapped[0].recorded == str(other)


def test_missing_plugin_skips_its_files_with_a_warning(project, tmp_path):
    repo, installed = project
    (repo / "src" / "pkg" / "fast.pyx").write_text("def h():\n    return 1\n")
    data = write_data(
        tmp_path / ".coverage",
        {str(installed / "mod.py"): [1], str(repo / "src" / "pkg" / "fast.pyx"): [1]},
        {str(repo / "src" / "pkg" / "fast.pyx"): "NoSuchPlugin.Module.Plugin"},
    )
    cell = collect(CollectOptions(cell_id=None, source_root=repo, python_data=(data,)))
    assert [f.path for f in cell.files] == ["src/pkg/mod.py"]
    assert any("NoSuchPlugin" in w and "1 file(s)" in w for w in cell.warnings)


def test_cli_corrupt_data_names_file_and_cell_and_writes_nothing(project, tmp_path):
    repo, installed = project
    good = write_data(tmp_path / ".coverage.good", {str(installed / "mod.py"): [1, 2]})
    bad = tmp_path / ".coverage.bad"
    bad.write_bytes(good.read_bytes()[:300])
    out = tmp_path / "cell.json"
    proc = run_xcompat_in_process(
        "coverage",
        "collect",
        "--cell-id",
        "py3.12-linux-x86_64-cpu",
        "--python-data",
        str(good),
        str(bad),
        "--source-root",
        str(repo),
        "--out",
        str(out),
    )
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr
    # exit 2 leaves nothing half-written: no artifact of the readable part alone
    assert not out.exists() and "was not written" in proc.stderr


def test_cli_usage_errors(tmp_path):
    proc = run_xcompat_in_process("coverage", "collect", "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2 and "nothing to collect" in proc.stderr
    proc = run_xcompat_in_process(
        "coverage",
        "collect",
        "--python-data",
        str(tmp_path / "nope"),
        "--map",
        "bad",
        "--out",
        str(tmp_path / "x.json"),
    )
    assert proc.returncode == 2 and "FROM=TO" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_data_folder_and_parallel_files_count_once_per_cell(project, tmp_path):
    repo, installed = project
    folder = tmp_path / "data"
    folder.mkdir()
    write_data(folder / ".coverage.host.1.a", {str(installed / "mod.py"): [1, 2]})
    write_data(folder / ".coverage.host.2.b", {str(installed / "mod.py"): [1, 7]})
    (folder / "unrelated.txt").write_text("not data")
    cell = collect(CollectOptions(cell_id="c", source_root=repo, python_data=(folder,)))
    (f,) = cell.files
    assert dict(zip(f.lines, f.hits)) == {1: 1, 2: 1, 3: 0, 7: 1, 8: 0}
