"""How severe a packaging-metadata change is, and the one release a change suggests.

A change is major only when it makes an installed combination impossible that worked
before (docs/abi.md, "Finding kinds and required bumps"); the suggested release follows the
same 0.x rule the bump between two versions does (``xcompat.abi.semver``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.abi.diff import diff_manifests
from xcompat.abi.manifest import Manifest
from xcompat.abi.rules import default_rules
from xcompat.abi.semver import VersionError, next_version, required_bump_for_versions
from xcompat.gate.checks import AbiEvidence, check_abi_bump
from xcompat.gate.versions import ReleaseStep
from xcompat.report.model import AbiFinding, AbiSection, Report
from xcompat.report.triage import plain, triage
from xcompat.results.status import bump_rank


def wheel(*requires_dist: str, version: str = "0.1.2", requires_python: str | None = ">=3.9") -> Manifest:
    return Manifest(source="mem", kind="wheel", name="pkg", version=version, requires_python=requires_python,
                    requires_dist=tuple(requires_dist))


def findings(old: Manifest, new: Manifest) -> dict[str, str]:
    return {f.kind: f.required_bump for f in diff_manifests(old, new).findings}


# -- metadata severity ----------------------------------------------------------------------------
def test_a_new_dependency_floor_is_minor_not_major():
    # the case seen on a 0.1.x project: Requires-Dist torch gained a floor, reported as a major break
    old, new = wheel("torch"), wheel("torch>=1.7.1", version="0.1.3")
    d = diff_manifests(old, new)
    assert [(f.kind, f.symbol, f.required_bump) for f in d.findings] == [
        ("requires_dist_floor_raised", "torch", "minor")]
    assert "(any) -> >=1.7.1" in d.findings[0].detail
    assert d.required_bump == "minor"


def test_a_raised_floor_is_minor():
    assert findings(wheel("numpy>=1.24"), wheel("numpy>=2.0")) == {"requires_dist_floor_raised": "minor"}


def test_only_versions_cut_off_above_or_inside_the_range_are_major():
    # the same dependency, three ways: a floor is minor, a ceiling or a hole is major
    assert findings(wheel("torch"), wheel("torch>=2.1")) == {"requires_dist_floor_raised": "minor"}
    for old, new in [
        ("torch>=2.1", "torch>=2.1,<2.6"),           # an upper bound where there was none
        ("torch>=2.1,<3", "torch>=2.1,<2.6"),        # an upper bound lowered
        ("numpy>=1.24", "numpy>=1.24,!=2.0.0"),      # a hole in the range
        ("torch", "torch>=2.1,<2.6"),                # a floor and a ceiling at once: the ceiling decides
    ]:
        assert findings(wheel(old), wheel(new)) == {"requires_dist_narrowed": "major"}, (old, new)
    # a raised Requires-Python drops interpreters entirely; a widened range is no finding
    assert findings(wheel(requires_python=">=3.9"), wheel(requires_python=">=3.11")) == {
        "requires_python_narrowed": "major"}
    assert findings(wheel("torch>=2.4"), wheel("torch>=2.1")) == {}


def test_a_new_required_dependency_is_minor_and_a_dropped_one_patch():
    assert findings(wheel("torch"), wheel("torch", "packaging")) == {"requires_dist_added": "minor"}
    assert findings(wheel("torch", "packaging"), wheel("torch")) == {"requires_dist_removed": "patch"}


def test_the_severities_are_data():
    rules = default_rules()  # rules.json
    assert rules["requires_dist_floor_raised"] == "minor"
    assert rules["requires_dist_removed"] == "patch"
    assert rules["requires_dist_narrowed"] == rules["requires_python_narrowed"] == "major"


# -- the suggested release ------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "bump", "suggested"), [
    ("0.1.3", "major", "0.2.0"),
    ("1.2.3", "major", "2.0.0"),
    ("0.0.3", "major", "0.0.4"),
    ("0.1.3", "minor", "0.1.4"),   # below 1.0 the patch component carries minor changes
    ("1.2.3", "minor", "1.3.0"),
    ("1.2.3", "patch", "1.2.4"),
    ("0.1.3", "patch", "0.1.4"),
    ("0.0.3", "minor", "0.0.4"),
    ("2", "minor", "2.1.0"),
    ("1!1.2.3", "major", "1!2.0.0"),
    ("1.2.3", "none", None),
])
def test_next_version(old, bump, suggested):
    assert next_version(old, bump) == suggested


@pytest.mark.parametrize("old", ["0.0.1", "0.0.9", "0.1.0", "0.1.3", "0.9.9", "1.0.0", "1.2.3", "3.4", "2.0.0rc1",
                                 "1.2.3.post4"])
@pytest.mark.parametrize("bump", ["patch", "minor", "major"])
def test_the_suggested_release_satisfies_the_bump_it_was_asked_for(old, bump):
    suggested = next_version(old, bump)
    assert bump_rank(required_bump_for_versions(old, suggested)) >= bump_rank(bump), suggested


def test_next_version_refuses_what_is_not_a_version():
    with pytest.raises(VersionError):
        next_version("banana", "major")


def _abi_report(old: str, new: str, actual: str, needed: str) -> Report:
    finding = AbiFinding(cell_id=None, kind="symbol_removed", library="pkg/_core.so", symbol="gone",
                         required_bump=needed)  # type: ignore[arg-type]
    abi = AbiSection(required_bump=needed, findings=(finding,), status="failed", summary="",  # type: ignore[arg-type]
                     actual_bump=actual, old_version=old, new_version=new)  # type: ignore[arg-type]
    return Report(title="t", conclusion="failure", headline="failed", cells=(), failures=(), problems=("abi",),
                  abi=abi)


def test_the_report_suggests_the_0x_release():
    (problem,) = [p for p in triage(_abi_report("0.1.3", "0.1.4", "minor", "major")) if p.section == "abi"]
    fix = plain(problem.fix)
    assert fix.startswith("release as 0.2.0") and "1.0.0" not in fix


def test_the_gate_suggests_the_same_release_as_the_report():
    step = ReleaseStep(tag="v0.1.4", version="0.1.4", previous_tag="v0.1.3", previous_version="0.1.3",
                       bump="minor", how_found="given")
    outcome = check_abi_bump([AbiEvidence(path=Path("abi.json"), required_bump="major", findings=1)], step)
    assert not outcome.passed
    assert outcome.reason.endswith("; release as 0.2.0")
    assert outcome.details["suggested_version"] == "0.2.0"
    (problem,) = [p for p in triage(_abi_report("0.1.3", "0.1.4", "minor", "major")) if p.section == "abi"]
    assert f"release as {outcome.details['suggested_version']}" in plain(problem.fix)
