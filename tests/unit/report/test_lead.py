"""The ten-second read: the top of the report says what broke, where, and what to do.

On the sample's real 56-cell plan (22 CPU cells pass, one test fails, one crashes, the
required CUDA smoke cell and 31 optional GPU cells never report) and on the demo.
"""

from __future__ import annotations

import re

import pytest
from tests.helpers import report_pages

from xcompat.report import render


@pytest.fixture(scope="module")
def plan56():
    return report_pages.plan56()


def top(text: str, lines: int = 12) -> str:
    return "\n".join(text.splitlines()[:lines])


def test_plan56_top_names_each_problem_with_its_fix_worst_first(plan56):
    text = render(plan56, "markdown", "pr_comment")
    head = top(text)
    assert head.startswith("## ❌ xcompat report: 3 problems keep this red")
    crash = head.index("test_scaled_add_large")
    failed = head.index("test_threads")
    missing = head.index("1 required cell has no result")
    assert crash < failed < missing
    assert head.count("**To fix:**") == 3
    assert "sample_ext/__init__.py:41 in scaled_add" in head  # the frame, relative to the project
    assert "assert len(set(sums)) == 1" in head  # the failing assertion itself


def test_plan56_missing_optional_cells_are_one_dim_line(plan56):
    text = render(plan56, "markdown", "pr_comment")
    lines = [ln for ln in text.splitlines() if "optional cells have no result" in ln]
    assert len(lines) == 1 and lines[0].startswith("<sub>31 optional cells have no result (not gating)")
    assert all(part in lines[0] for part in ("15 cuda12.8", "8 mps", "8 rocm6.2"))


def test_plan56_says_each_count_once(plan56):
    text = render(plan56, "markdown", "pr_comment")
    assert len(re.findall(r"\b22 passed\b", text)) == 1
    assert len(re.findall(r"\b31 optional\b", text)) == 2  # the count line and the grouped line
    assert text.count("120/122") == 1


def test_plan56_grid_sorts_versions_as_versions_and_names_them_once(plan56):
    text = render(plan56, "markdown")
    grid = text.split("### Matrix", 1)[1].split("###", 1)[0]
    rows = [ln for ln in grid.splitlines() if ln.startswith("| linux x86\\_64 cpu")]
    assert [r.split("|")[2].strip() for r in rows] == ["torch 2.5", "torch 2.13"]
    assert "Every cell: numpy 2.1" in grid
    assert "numpy" not in "\n".join(ln for ln in grid.splitlines() if ln.startswith("| "))
    header = next(ln for ln in grid.splitlines() if ln.startswith("| Device"))
    assert header.split("|")[3:-1] == [" 3.10 ", " 3.11 ", " 3.12 ", " 3.13 ", " 3.13t "]


def test_plan56_fits_a_pr_comment(plan56):
    from xcompat.report.channels import measure

    assert measure(render(plan56, "markdown", "pr_comment"), "chars") <= 65536


def test_demo_says_the_abi_sentence_once_and_leads_with_the_fix():
    text = render(report_pages.demo(), "markdown")
    assert text.count("19 finding(s), 11 gating") <= 1
    head = top(text, 6)
    assert "ABI needs a major bump" in head and "**To fix:**" in head
    assert "sample_legacy_sum" in head  # the symbol to restore
    grid = text.split("### Matrix", 1)[1].split("###", 1)[0]
    assert "tests ✅ 6/6 · abi ❌" in grid


def test_demo_abi_findings_are_grouped_and_folded():
    text = render(report_pages.demo(), "markdown")
    abi = text.split("### ABI", 1)[1].split("### Coverage", 1)[0]
    assert "<details><summary>19 changes (11 major, 8 minor) in 11 groups</summary>" in abi
    assert abi.count("**Exported symbols removed** (major, 2) `symbol_removed`") == 1
    # the same removal in two libraries is one line naming both, by their short names
    assert "- `sample_legacy_sum` in \\_core, \\_core\\_abi3 — " in abi
    assert "cpython-311-x86\\_64-linux-gnu.so" not in abi


def test_demo_coverage_uses_language_names():
    text = render(report_pages.demo(), "markdown")
    assert "C 78.0%, C++ 100.0%, Python 86.8%" in text
    assert "diff coverage not measured (threshold 70.0%)" in text


def test_demo_names_the_release_and_the_versions_actually_tested():
    text = render(report_pages.demo(), "markdown")
    head = top(text, 6)
    assert "release as 2.0.0" in head and "1.0.0 → 1.1.0" in head
    grid = text.split("### Matrix", 1)[1].split("###", 1)[0]
    assert "ran numpy 2.4.6" in grid and "torch 2.13.0" not in grid


def test_plan56_names_the_runner_labels_that_never_came(plan56):
    text = render(plan56, "markdown", "pr_comment")
    assert "runner `self-hosted, linux, x64, gpu, cuda`" in top(text)
    assert "8 mps (runner `macos-14`)" in text
