"""The contract stages' entries (run, CI, kinds) and their pure rules: how a matrix key judges a
result, which stage reports a finding both could claim, what a wheel's modules and a matrix's
lowest Python are."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from xcompat.pipeline.ci.table import CI_STAGES
from xcompat.pipeline.registry import PIPELINE
from xcompat.pipeline.stages.contracts_python_floor import lowest_python
from xcompat.pipeline.stages.contracts_runtime_libraries import count_new, modules_of
from xcompat.results.contracts import abi_claims, hand_to_abi
from xcompat.results.envelope import parse_envelope
from xcompat.results.stages import STAGES
from xcompat.results.verdict import judge
from xcompat.settings import defaults_settings

KINDS = ["contracts-stubs", "contracts-runtime-libraries", "contracts-python-floor"]
REPO = Path(__file__).resolve().parents[3]


def _settings(**modes: Any) -> Any:
    """The defaults with these ``contracts`` modes; no tests asked, so a cell needs no test result here."""
    base = defaults_settings()
    return replace(base, tests=replace(base.tests, pytest_paths=()), contracts=replace(base.contracts, **modes))


def _result(kind: str, cell: str | None, findings: list[dict[str, Any]], **extra: Any) -> Any:
    doc = {"version": 1, "kind": kind, "cell_id": cell, "status": "failed" if findings else "passed",
           "summary": f"{len(findings)} findings", "findings": findings, **extra}
    return parse_envelope(doc, f"{kind}.json")


def test_the_three_stages_are_registered_before_the_report_with_their_kinds() -> None:
    names = list(PIPELINE)
    first = names.index(KINDS[0])
    assert names[first:first + 3] == KINDS  # after the ABI diff (the stubs stage reads it), before the report
    assert names.index("abi") < first and first + 3 <= names.index("report")
    for kind in KINDS:
        entry = STAGES[kind]
        assert (REPO / "schemas" / f"{kind}.schema.json").is_file() and entry.schemas == (kind,)
        assert entry.per_cell is (kind != "contracts-python-floor")
        assert entry.requirement is None and entry.excused is not None  # never demanded; judged by its key
        assert kind in CI_STAGES and CI_STAGES[kind].name == kind


@pytest.mark.parametrize("kind,key", [("contracts-stubs", "stubs"), ("contracts-runtime-libraries",
                                                                      "runtime_libraries")])
def test_a_cell_finding_counts_only_under_gate(kind: str, key: str) -> None:
    plan = [{"id": "c1", "required": True}]
    build = _result("build", "c1", [])
    found = _result(kind, "c1", [{"code": "duplicate-runtime", "message": "two copies"}])
    shown = judge([build, found], plan, settings=_settings())
    assert shown.conclusion == "success" and shown.cells[0].status == "passed"
    judged = next(s for s in shown.cells[0].stages if s.result.kind == kind)
    assert not judged.counted and "report" in judged.reason
    gated = judge([build, found], plan, settings=_settings(**{key: "gate"}))
    assert gated.conclusion == "failure" and gated.cells[0].status == "failed"


def test_runtime_findings_the_baseline_already_had_do_not_gate() -> None:
    plan = [{"id": "c1", "required": True}]
    build = _result("build", "c1", [])
    known = _result("contracts-runtime-libraries", "c1", [{"code": "duplicate-runtime", "message": "x"}],
                    new_findings=0)
    assert judge([build, known], plan, settings=_settings(runtime_libraries="gate")).conclusion == "success"
    new = _result("contracts-runtime-libraries", "c1", [{"code": "duplicate-runtime", "message": "x"}],
                  new_findings=1)
    assert judge([build, new], plan, settings=_settings(runtime_libraries="gate")).conclusion == "failure"


def test_the_python_floor_of_no_cell_is_judged_by_its_key_not_the_default_rule() -> None:
    floor = _result("contracts-python-floor", None, [{"code": "above-requires-python", "message": "x.py:2"}])
    assert judge([floor], None, settings=_settings()).problems == ()  # failed, yet not red under report
    assert judge([floor], None, settings=None).problems == ()  # no settings: the default, report
    red = judge([floor], None, settings=_settings(python_floor="gate"))
    assert red.conclusion == "failure" and red.problems[0].startswith("contracts-python-floor: failed")


def test_new_runtime_findings_are_those_the_baseline_lacks() -> None:
    base = {"findings": [{"code": "duplicate-runtime", "family": "OpenMP", "paths": "/old/a, /old/b"}]}
    doc = {"findings": [{"code": "duplicate-runtime", "family": "OpenMP", "paths": "/new/a, /new/b"},
                        {"code": "library-outside", "path": "/tmp/x/libfoo.so", "soname": "libfoo.so"}]}
    assert count_new(doc, base) == 1
    assert count_new(doc, {"findings": []}) == 2
    static = [{"code": "static-cxx-runtime", "family": "C++ runtime (libstdc++)", "paths": f"/{d}/lib{n}.so"}
              for d, n in (("old", "a"), ("new", "a"), ("new", "b"))]
    assert count_new({"findings": static[1:]}, {"findings": static[:1]}) == 1  # liba known, libb new


def test_a_finding_both_stages_could_claim_is_reported_once() -> None:
    """``legacy`` was removed from 1.1's C module but 1.1's stub still declares it: stubtest says
    missing-at-runtime, the ABI diff (verified against both runtimes) says python_api_removed.
    The removal between releases is the ABI stage's question; the stubs stage hands it over.
    ``random_seed`` (in the stub, never in any runtime) the ABI diff does not report: it stays."""
    abi = {"findings": [
        {"kind": "python_api_removed", "symbol": "pkg._core.legacy"},
        {"kind": "python_api_added", "symbol": "pkg._core.random_seed"},  # not a claim: added is old != new
        {"kind": "symbol_removed", "symbol": "pkg_legacy"}]}
    assert abi_claims(abi) == {"pkg._core.legacy"}
    stubs: dict[str, Any] = {"status": "failed", "summary": "2 findings", "findings": [
        {"code": "missing-at-runtime", "object": "pkg._core.legacy", "message": "legacy is not present"},
        {"code": "missing-at-runtime", "object": "pkg._core.random_seed", "message": "random_seed ..."}]}
    assert hand_to_abi(stubs, abi_claims(abi)) == 1
    assert [f["object"] for f in stubs["findings"]] == ["pkg._core.random_seed"]
    assert [f["object"] for f in stubs["reported_by_abi"]] == ["pkg._core.legacy"]
    assert stubs["status"] == "failed" and "1 on objects the ABI diff reports" in stubs["summary"]
    only = {"status": "failed", "findings": [{"code": "inconsistent", "object": "pkg._core.legacy.__init__"}]}
    assert hand_to_abi(only, {"pkg._core.legacy"}) == 1 and only["status"] == "passed"
    assert hand_to_abi(stubs, set()) == 0


def test_the_modules_a_wheel_offers_its_users() -> None:
    files = ["pkg/__init__.py", "pkg/_core.cpython-311-x86_64-linux-gnu.so", "pkg/sub/__init__.py",
             "solo.py", "_speedups.abi3.so", "pkg-1.0.dist-info/RECORD", "pkg.libs/libgomp-a34b3233.so.1",
             "bin-dir/tool.py", "pkg-1.0.data/purelib/other/__init__.py"]
    assert modules_of(files) == ["_speedups", "pkg", "solo"]


def test_the_lowest_python_of_the_matrix() -> None:
    cells = [{"python": "3.12"}, {"python": "3.13t"}, {"python": "3.10"}, {"python": "pypy"}, {}]
    assert lowest_python(cells) == "3.10"
    assert lowest_python([{"python": "3.13t"}]) == "3.13"
    assert lowest_python([]) is None


def test_the_ci_steps_of_the_contract_stages(tmp_path: Path) -> None:
    import json
    import zipfile

    from xcompat.pipeline.ci.step import CiInputs, StageRefused

    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    inputs = CiInputs(output_dir=str(tmp_path / "out"), wheelhouse=str(wheels), cell="c1", project_dir=str(tmp_path))
    with pytest.raises(StageRefused, match="no wheel"):
        CI_STAGES["contracts-stubs"].step(inputs)
    with zipfile.ZipFile(wheels / "pkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("pkg/__init__.py", "")
        zf.writestr("pkg/_core.abi3.so", "")
        zf.writestr("pkg-1.0.dist-info/RECORD", "")
    stubs = CI_STAGES["contracts-stubs"].step(inputs)
    assert stubs.argv[:3] == ["contracts", "stubs", str(wheels / "pkg-1.0-py3-none-any.whl")]
    assert stubs.result == inputs.cell_dir / "contracts-stubs.json" and stubs.install and not stubs.with_wheel
    libs = CI_STAGES["contracts-runtime-libraries"].step(inputs)
    assert libs.argv[libs.argv.index("--import") + 1] == "pkg" and libs.argv.count("--import") == 1
    assert libs.with_wheel and libs.argv[-2:] == ["--cell", "c1"]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plan.json").write_text(json.dumps({"version": 1, "cells": [
        {"id": "a", "python": "3.12"}, {"id": "b", "python": "3.10"}]}))
    floor = CI_STAGES["contracts-python-floor"].step(inputs)
    assert floor.argv[floor.argv.index("--lowest-python") + 1] == "3.10"
    assert floor.result == inputs.results / "project" / "contracts-python-floor.json" and "--cell" not in floor.argv
