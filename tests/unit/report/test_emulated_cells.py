"""The report marks a cell that ran on an emulated lane: QEMU's version, the CPU model (and the
floor it stands for), the build route and the tests' time, in every rendering; a native cell
is shown as before, and a lane's not-run cells are listed, never judged."""

from __future__ import annotations

import json

import jsonschema
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, stage_result

from xcompat.report import build_report, render
from xcompat.report.emulation import emulation_of
from xcompat.report.model import Report
from xcompat.resources import schema_path
from xcompat.results.stage_result import StageResult

EMULATION = {"arch": "aarch64", "qemu": "7.2.22", "cpu": "cortex-a57", "floor": "armv8.0-a",
             "root": "debian bookworm", "python": "3.11", "build": "cross", "build_seconds": 4.2, "seconds": 31.5}
LABEL = "emulated: QEMU 7.2, cortex-a57 (armv8.0-a floor), cross build, tests 32s"


def _report(emulation: dict[str, object] | None) -> tuple[Report, str]:
    lane = make_cell("3.11", arch="aarch64")
    other = make_cell("3.12", arch="aarch64")
    test = make_test_result(lane.id, [make_test("tests/test_wire.py::test_a"), make_test("tests/test_wire.py::test_b")])
    if emulation is not None:
        test["emulation"] = emulation
    plan = make_plan([lane, other])
    plan["cells"] = [c for c in plan["cells"] if c["id"] == lane.id]
    plan["not_run_here"] = [{"id": other.id, "required": True,
                             "why": "Python 3.12: the emulated aarch64 root has only Python 3.11"}]
    return build_report([stage_result("build", lane.id), test], plan), lane.id


def test_an_emulated_cell_is_marked_in_every_rendering() -> None:
    report, cid = _report(EMULATION)
    cell = next(c for c in report.cells if c.id == cid)
    assert cell.emulation is not None and cell.emulation.label == LABEL
    assert cell.device == f"linux aarch64 ({LABEL}) cpu"
    assert LABEL in render(report, "markdown")
    assert LABEL in render(report, "text")
    document = json.loads(render(report, "json"))
    jsonschema.validate(document, json.loads(schema_path("report").read_text(encoding="utf-8")))
    marked = next(c for c in document["cells"] if c["id"] == cid)["emulation"]
    assert marked["label"] == LABEL and marked["build"] == "cross" and marked["cpu"] == "cortex-a57"


def test_a_native_cell_is_not_marked() -> None:
    report, cid = _report(None)
    cell = next(c for c in report.cells if c.id == cid)
    assert cell.emulation is None and cell.device == "linux aarch64 cpu"
    assert "emulated:" not in render(report, "markdown")
    assert next(c for c in json.loads(render(report, "json"))["cells"] if c["id"] == cid)["emulation"] is None


def test_cells_the_lanes_root_cannot_run_are_not_run_here_neither_passed_nor_failed() -> None:
    report, cid = _report(EMULATION)
    assert [c.id for c in report.cells] == [cid] and report.conclusion == "success"
    assert [(c.id, c.why) for c in report.not_run_here] == [
        ("py3.12-linux-aarch64-cpu", "Python 3.12: the emulated aarch64 root has only Python 3.11")]
    markdown = render(report, "markdown")
    assert "Not run here" in markdown and "the emulated aarch64 root has only Python 3.11" in markdown


def test_the_build_records_emulation_stands_when_the_tests_wrote_none() -> None:
    built = {k: v for k, v in EMULATION.items() if k != "seconds"}
    build = StageResult(kind="build", cell_id="c", status="passed", summary="", source="wheels/build.json",
                        data={**stage_result("build", "c"), "emulation": built})
    found = emulation_of([build])
    assert found is not None and found.label == "emulated: QEMU 7.2, cortex-a57 (armv8.0-a floor), cross build"
    assert emulation_of([]) is None
    broken = StageResult(kind="test", cell_id="c", status="passed", summary="", source="test.json",
                         data={"emulation": {"arch": "aarch64", "qemu": 7}})
    assert emulation_of([broken]) is None  # malformed: ignored, never a crash of the report
