from __future__ import annotations

import itertools
import json

import jsonschema
import pytest
from tests.helpers.matrix import example_files, matrix_text, sample_matrix_path

from xcompat.matrix import load_matrix
from xcompat.matrix.plan import (
    build_identifier,
    cells_for_runner,
    cibuildwheel_selectors,
    expand,
    github_matrix,
    gitlab_matrix,
    plan_document,
    render,
)
from xcompat.model import Cell
from xcompat.resources import schema_path

PLAN_SCHEMA = json.loads(schema_path("plan").read_text())


def _validate(doc):
    jsonschema.Draft202012Validator(PLAN_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)


def test_sample_expansion_matches_an_independent_count():
    m = load_matrix(sample_matrix_path())
    cells = expand(m)
    # Independent computation of the same expansion from the file's figures.
    pythons = ["3.10", "3.11", "3.12", "3.13", "3.13t"]
    torch = ["2.5", "2.13"]
    lanes = [
        ("cpu", "linux", "x86_64"),
        ("cpu", "linux", "aarch64"),
        ("cpu", "macos", "arm64"),
        ("cuda", "linux", "x86_64"),
        ("cuda", "linux", "aarch64"),
        ("rocm", "linux", "x86_64"),
        ("mps", "macos", "arm64"),
    ]
    expected = {
        (b, p, a, py, t)
        for (b, p, a), py, t in itertools.product(lanes, pythons, torch)
        if not (py in ("3.13", "3.13t") and t == "2.5")
    }
    got = {(c.backend, c.platform, c.arch, c.python, c.framework("torch")) for c in cells}
    assert got == expected
    assert len(cells) == len(expected) == 7 * 8
    ids = [c.id for c in cells]
    assert len(set(ids)) == len(ids)
    # The include entry replaced its cell and made it required.
    smoke = next(c for c in cells if c.id == "py3.12-linux-x86_64-cuda12.8-numpy2.1-torch2.13")
    assert smoke.required and smoke.gpu_archs == ("sm_80", "sm_90")
    assert smoke.runs_on == ("self-hosted", "linux", "x64", "gpu", "cuda")
    assert all(c.required for c in cells if c.backend == "cpu")
    mps = next(c for c in cells if c.backend == "mps")
    assert mps.runs_on == ("macos-14",) and mps.policy == "11.0" and not mps.required


def test_expansion_is_stable_and_round_trips_through_cell_dicts():
    m = load_matrix(sample_matrix_path())
    first, second = expand(m), expand(load_matrix(sample_matrix_path().read_bytes()))
    assert first == second
    assert [Cell.from_dict(c.to_dict()) for c in first] == first


def test_cells_for_runner():
    cells = expand(load_matrix(sample_matrix_path()))
    mine = cells_for_runner(cells, platform="linux", arch="x86_64", backends=("cpu",))
    assert mine and all((c.platform, c.arch, c.backend) == ("linux", "x86_64", "cpu") for c in mine)
    assert len(mine) == 8
    assert cells_for_runner(cells, platform="windows", arch="AMD64", backends=("cpu",)) == []
    assert len(cells_for_runner(cells, backends=("cuda", "rocm"))) == 24
    assert len(cells_for_runner(cells, python="3.13t")) == 7


def test_exclude_and_include_rules():
    extra = (
        "exclude:\n  - python: '3.11'\n    frameworks: {torch: '2.13'}\n"
        "include:\n  - {python: '3.13t', platform: linux, arch: aarch64, backend: cpu, required: false,"
        " runs-on: [arm-box]}\n"
    )
    cells = expand(load_matrix(matrix_text(extra=extra).encode()))
    assert [c.id for c in cells] == ["py3.12-linux-x86_64-cpu-torch2.13", "py3.13t-linux-aarch64-cpu"]
    extra_cell = cells[1]
    assert extra_cell.runs_on == ("arm-box",) and not extra_cell.required and extra_cell.frameworks == ()


@pytest.mark.parametrize("path", [sample_matrix_path(), *example_files("positive")], ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["json", "github", "gitlab", "cibuildwheel"])
def test_every_format_matches_the_plan_schema(path, fmt):
    m = load_matrix(path)
    doc = render(fmt, m, expand(m))
    assert doc["version"] == 1 and doc["format"] == fmt
    _validate(doc)


def test_plan_document_contents():
    m = load_matrix(sample_matrix_path())
    cells = expand(m)
    doc = plan_document(m, cells)
    assert doc["counts"] == {
        "cells": 56,
        "required": 25,
        "by_backend": {"cpu": 24, "cuda": 16, "rocm": 8, "mps": 8},
    }
    assert doc["required"] == [c.id for c in cells if c.required]
    assert doc["cells"][0] == cells[0].to_dict()
    assert doc["settings"]["coverage"] == {"overall": 60.0, "diff": 70.0}
    assert doc["matrix_sha256"] == m.sha256


def test_github_and_gitlab_entries():
    m = load_matrix(sample_matrix_path())
    cells = expand(m)
    gh = github_matrix(m, cells)["matrix"]["include"]
    assert [e["cell"] for e in gh] == [c.id for c in cells]
    assert all(e["runs-on"] for e in gh)
    assert gh[0]["frameworks"] == {"numpy": "2.1", "torch": "2.5"}
    gl = gitlab_matrix(m, cells)["parallel"]["matrix"]
    # GitLab expands list values into several jobs: every value must be one string.
    assert all(isinstance(v, str) for entry in gl for v in entry.values())
    assert gl[0]["XCOMPAT_RUNNER_TAG"] == "ubuntu-24.04"


@pytest.mark.parametrize(
    "python, platform, arch, policy, expected",
    [
        ("3.12", "linux", "x86_64", "manylinux_2_28", "cp312-manylinux_x86_64"),
        ("3.13t", "linux", "aarch64", "musllinux_1_2", "cp313t-musllinux_aarch64"),
        ("3.10", "macos", "arm64", "11.0", "cp310-macosx_arm64"),
        ("3.11", "windows", "AMD64", None, "cp311-win_amd64"),
        ("3.11", "windows", "x86", None, "cp311-win32"),
        ("3.12", "windows", "ARM64", None, "cp312-win_arm64"),
    ],
)
def test_build_identifiers(python, platform, arch, policy, expected):
    assert build_identifier(python, platform, arch, policy) == expected


def test_cibuildwheel_rules_per_major_version():
    m = load_matrix(sample_matrix_path())
    cells = expand(m)
    v3 = cibuildwheel_selectors(m, cells, cibuildwheel_major=3)
    assert v3["platforms"]["linux"]["env"]["CIBW_ENABLE"] == "cpython-freethreading"
    assert "cp313t-manylinux_x86_64" in v3["platforms"]["linux"]["identifiers"]
    assert v3["unsupported"] == []
    v4 = cibuildwheel_selectors(m, cells, cibuildwheel_major=4)
    assert "CIBW_ENABLE" not in v4["platforms"]["linux"]["env"]
    assert {u["identifier"] for u in v4["unsupported"]} == {
        "cp313t-manylinux_x86_64",
        "cp313t-manylinux_aarch64",
        "cp313t-macosx_arm64",
    }
    # One wheel per python/platform/arch, whatever the backends and framework versions.
    assert len(v4["platforms"]["linux"]["identifiers"]) == 8
    assert v4["platforms"]["macos"]["env"]["MACOSX_DEPLOYMENT_TARGET"] == "11.0"
    assert v4["platforms"]["linux"]["env"]["CIBW_MANYLINUX_AARCH64_IMAGE"] == "manylinux_2_28"
