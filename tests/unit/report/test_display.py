"""Display rules: versions sorted as versions, short library names, tested versions, To-fix lines from model facts."""

from __future__ import annotations

from dataclasses import replace

from xcompat.report import render
from xcompat.report.display import build_grid, group_abi, language_name, short_library, version_key
from xcompat.report.model import AbiFinding, AbiSection, CellReport, Failure, Report, StageStatus
from xcompat.report.triage import optional_missing_line, plain, triage


def cell(python="3.12", backend="cpu", status="passed", required=True, **kw):
    return CellReport(
        id=f"py{python}-linux-x86_64-{backend}", python=python, platform="linux", arch="x86_64", backend=backend,
        status=status, required=required, **kw,
    )


def report(cells=(), failures=(), abi=None, conclusion="failure"):
    return Report(title="xcompat report", conclusion=conclusion, headline="", cells=tuple(cells), failures=tuple(failures), problems=("x",) if conclusion == "failure" else (), abi=abi)


def test_versions_sort_as_versions():
    assert sorted(["2.13", "2.5", "2.10", "nightly"], key=version_key) == ["2.5", "2.10", "2.13", "nightly"]


def test_short_library_names():
    assert short_library("x86_64/sample_ext/_core.cpython-311-x86_64-linux-gnu.so") == "_core"
    assert short_library("x86_64/sample_ext/_core_abi3.abi3.so") == "_core_abi3"
    assert short_library("pkg/libfoo.so.1.2") == "foo"
    assert short_library("pkg/_ext.cp312-win_amd64.pyd") == "_ext"
    assert short_library("(wheel)") == "wheel"
    assert language_name("cpp") == "C++" and language_name("cuda") == "CUDA" and language_name("zig") == "zig"


def test_tested_versions_are_shown_only_when_they_differ_from_the_label():
    differs = cell(frameworks=(("numpy", "2.1"), ("torch", "2.13")), tested_frameworks=(("numpy", "2.4.6"), ("torch", "2.13.0+cpu")),
                   stages=(StageStatus(kind="test", status="passed", summary=""),), tests_passed=6)
    assert differs.tested_differences == (("numpy", "2.1", "2.4.6"),)
    r = report([differs], conclusion="success")
    grid = render(r, "markdown").split("### Matrix", 1)[1]
    assert "ran numpy 2.4.6" in grid and "torch 2.13.0" not in grid
    assert "ran numpy 2.4.6" in render(r, "html") and "[ran numpy 2.4.6]" in render(r, "text")


def test_grid_rows_group_frameworks_and_columns_are_pythons():
    cells = [cell(p, frameworks=(("torch", t),)) for p in ("3.13t", "3.10", "3.13") for t in ("2.13", "2.5")]
    grid = build_grid([replace(c, id=f"{c.id}-{c.frameworks[0][1]}") for c in cells])
    assert grid.pythons == ("3.10", "3.13", "3.13t")
    assert [r.frameworks for r in grid.rows] == ["torch 2.5", "torch 2.13"]


def test_abi_fix_names_the_release_and_what_to_restore():
    findings = (
        AbiFinding(cell_id=None, kind="symbol_removed", library="a/_core.cpython-311-x86_64-linux-gnu.so", symbol="old_fn", required_bump="major", message="old_fn is no longer exported"),
        AbiFinding(cell_id=None, kind="symbol_removed", library="a/_core_abi3.abi3.so", symbol="old_fn", required_bump="major", message="old_fn is no longer exported"),
        AbiFinding(cell_id=None, kind="glibc_floor_raised", library="a/_core.so", symbol="", required_bump="major", message="glibc 2.36"),
        AbiFinding(cell_id=None, kind="symbol_added", library="a/_core.so", symbol="new_fn", required_bump="minor", message="new"),
    )
    abi = AbiSection(required_bump="major", findings=findings, status="failed", summary="", actual_bump="minor", old_version="1.4.2", new_version="1.5.0")
    (problem,) = triage(report(abi=abi))
    title, fix = plain(problem.title), plain(problem.fix)
    assert "ABI needs a major bump" in title and "3 changes exceed the minor bump" in title and "`1.4.2 → 1.5.0`" in title
    assert fix.startswith("release as 2.0.0, or restore `old_fn` (_core, _core_abi3) and undo: glibc floor raised")
    groups = group_abi(findings)
    assert [(g.title, len(g.items), g.count) for g in groups] == [("Exported symbols removed", 1, 2), ("glibc floor raised", 1, 1), ("Exported symbols added", 1, 1)]


def test_missing_cells_name_the_runner_labels_that_never_came():
    labels = ("self-hosted", "linux", "x64", "gpu", "cuda")
    cells = [cell("3.12", "cuda", "missing", runs_on=labels), cell("3.11", "cuda", "missing", required=False, runs_on=labels),
             cell("3.10", "rocm", "missing", required=False, runs_on=("self-hosted", "rocm"))]
    r = report(cells)
    (problem,) = triage(r)
    assert "runner `self-hosted, linux, x64, gpu, cuda`" in plain(problem.title)
    assert plain(problem.fix).startswith("bring a runner with the labels `self-hosted, linux, x64, gpu, cuda` online")
    line = plain(optional_missing_line(r))
    assert line.startswith("2 optional cells have no result (not gating): ")
    assert "1 cuda (runner `self-hosted, linux, x64, gpu, cuda`)" in line and "1 rocm (runner `self-hosted, rocm`)" in line


def test_timeouts_leaks_and_errors_have_symbols_and_fixes():
    failures = [
        Failure(cell_id="c", kind="test", name="t.py::test_hang", outcome="timeout", message="timed out after 60 s"),
        Failure(cell_id="c", kind="test", name="t.py::test_leak", outcome="leaked", message="grew 12 MiB over 5 calls"),
        Failure(cell_id="c", kind="test", name="t.py::test_err", outcome="error", message="fixture 'db' not found"),
    ]
    text = render(report([cell(status="failed")], failures), "markdown")
    assert "⏱️ `t.py::test_hang` **timeout**" in text
    assert "💧 `t.py::test_leak` **leaked**" in text and "memory grew over repeated calls: grew 12 MiB" in text
    assert "❗ `t.py::test_err` **error**" in text
    html = render(report([cell(status="failed")], failures), "html")
    for status in ("timeout", "leaked", "error"):
        assert f'class="chip {status}"' in html
