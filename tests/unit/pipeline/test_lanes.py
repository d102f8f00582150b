"""``xcompat run --arch``: the options, what the plan runs and does not run on a lane, which
stages a lane skips and why, the ISA floor setting, and the lane's test command line.

The lane here is the real ``RunLane`` over a ``Lane`` whose root is an empty folder: every
answer below is computed from the tables and the configuration, none starts QEMU."""

from __future__ import annotations

import argparse
import io
import shlex
from pathlib import Path

import pytest

from xcompat.commands import run as run_command
from xcompat.emulation.arches import arch, host_arch
from xcompat.emulation.binfmt import Emulator
from xcompat.emulation.lane import Lane
from xcompat.emulation.run_lane import RunLane
from xcompat.errors import InputError, UsageError
from xcompat.log import Logger
from xcompat.matrix import load_matrix
from xcompat.pipeline import lanes
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import LocalPipeline, RunConfig
from xcompat.pipeline.stages.plan import not_run_here
from xcompat.settings import resolve_settings

MATRIX = """\
xcompat: 1
repo: example/lane
serial: 1
python: ["3.11", "3.12"]
platforms:
  linux:
    archs: [x86_64, aarch64]
backends:
  cpu:
    required: true
tests:
  kernels: all
  pytest: [tests]
abi:
  isa-floors: {aarch64: armv8.0-a, x86_64: x86-64-v2}
"""


def _lane(tmp_path: Path, floor: str | None = "armv8.0-a", *, torch: bool = False) -> RunLane:
    row = arch("aarch64")
    root = tmp_path / "root"
    if torch:
        (root / "opt/xcompat-venv/lib/python3.11/site-packages/torch").mkdir(parents=True)
        (root / "opt/xcompat-venv/lib/python3.11/site-packages/.xcompat-torch").write_text("torch\n")
    lane = Lane(arch=row, root=root, emulator=Emulator(arch="aarch64", interpreter="/x", qemu="/q", version="7.2.22"),
                cpu=row.cpu_model(floor), floor=floor, python="3.11", suite="bookworm")
    return RunLane(lane=lane, package=tmp_path / "pkg")


def _context(tmp_path: Path, lane: RunLane | None, matrix: str = MATRIX) -> RunContext:
    path = tmp_path / "matrix.yml"
    path.write_text(matrix, encoding="utf-8")
    settings = resolve_settings(load_matrix(path.read_bytes(), source=str(path)), {}, env={}, signed=False)
    cfg = RunConfig(project=tmp_path, matrix=path, allowed_signers=None, baseline=None, out=tmp_path / "out",
                    settings=settings, lane=lane)
    return RunContext(LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO())))


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_command.configure_parser(parser)
    return parser.parse_args(list(argv))


def test_arch_and_floor_are_options_of_xcompat_run() -> None:
    args = _parse(".", "--arch", "aarch64", "--floor", "armv8.0-a")
    assert (args.arch, args.floor) == ("aarch64", "armv8.0-a")
    assert (_parse(".").arch, _parse(".").floor) == (None, None)


@pytest.mark.parametrize(("argv", "error", "words"), [
    (["--floor", "armv8.0-a"], UsageError, "--floor needs --arch"),
    (["--arch", host_arch()], UsageError, "this machine's own architecture"),
    (["--arch", "riscv64"], InputError, "cannot emulate the architecture 'riscv64'"),
    (["--arch", "aarch64", "--floor", "armv9-a"], InputError, "unknown ISA floor 'armv9-a' for aarch64"),
])
def test_a_lane_that_cannot_be_is_refused_in_one_line_before_anything_runs(
        tmp_path: Path, argv: list[str], error: type[Exception], words: str) -> None:
    config = _context(tmp_path, None).cfg
    with pytest.raises(error, match=words):
        run_command._with_lane(config, _parse(".", *argv))


def test_ci_refuses_a_floor_the_signed_matrix_does_not_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    config = _context(tmp_path, None).cfg
    with pytest.raises(UsageError, match="refusing --floor"):
        run_command._with_lane(config, _parse(".", "--arch", "aarch64", "--floor", "armv8.2-a"))


def test_xcompat_build_refuses_an_arch_it_cannot_emulate_in_one_line(tmp_path: Path) -> None:
    from xcompat.commands import build as build_command

    parser = argparse.ArgumentParser()
    build_command.configure_parser(parser)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '1'\n", encoding="utf-8")
    args = parser.parse_args([str(tmp_path), "--arch", "riscv64", "--out", str(tmp_path / "out")])
    with pytest.raises(InputError, match="cannot emulate the architecture 'riscv64'"):
        build_command.execute(args)
    assert not (tmp_path / "out" / "build.json").exists()


def test_the_plan_of_a_lane_is_its_arch_its_roots_python_and_the_cpu(tmp_path: Path) -> None:
    native = _context(tmp_path, None)
    assert lanes.plan_target(native, "x86_64", "3.12", ["cpu", "cuda"]) == ("x86_64", "3.12", ["cpu", "cuda"])
    lane = _context(tmp_path, _lane(tmp_path))
    assert lanes.plan_target(lane, "x86_64", "3.12", ["cpu", "cuda"]) == ("aarch64", "3.11", ["cpu"])


def test_cells_of_a_python_the_root_lacks_are_not_run_here_and_say_so(tmp_path: Path) -> None:
    context = _context(tmp_path, _lane(tmp_path))
    found = {c["id"]: c["why"] for c in not_run_here(context, {"py3.11-linux-aarch64-cpu"}, "linux", "aarch64",
                                                      ["cpu"], "3.11")}
    assert found["py3.12-linux-aarch64-cpu"] == "Python 3.12: the emulated aarch64 root has only Python 3.11"
    assert found["py3.11-linux-x86_64-cpu"] == ("linux/x86_64 (this run is the emulated aarch64 lane; "
                                                "without --arch it runs this machine's own)")
    assert "py3.11-linux-aarch64-cpu" not in found
    native = _context(tmp_path, None)
    assert lanes.elsewhere_python(native, "3.12", "3.11") == "Python 3.12 (this is 3.11)"


def test_a_lane_skips_coverage_host_imports_and_torchless_kernels_with_the_reason(tmp_path: Path) -> None:
    context = _context(tmp_path, _lane(tmp_path))
    # aarch64 has a torch wheel: the kernels run in the lane (torch installed there when missing)
    assert context.cfg.lane is not None and context.cfg.lane.torch == "2.6.0"
    assert lanes.skip_reason(context, "kernels") is None
    assert "coverage is measured by the native cells" in (lanes.skip_reason(context, "coverage") or "")
    assert "cannot load aarch64 code" in (lanes.skip_reason(context, "contracts-runtime-libraries") or "")
    assert lanes.skip_reason(context, "test") is None and lanes.skip_reason(context, "abi") is None
    s390x = RunLane(lane=Lane(arch=arch("s390x"), root=tmp_path, emulator=Emulator("s390x", "/x", "/q", "7.2"),
                              cpu="max", floor=None, python="3.11", suite="bookworm"), package=tmp_path)
    assert _lane(tmp_path / "t", torch=True).has_torch and not _lane(tmp_path / "u").has_torch
    assert "there is no torch for s390x" in (lanes.skip_reason(_context(tmp_path, s390x), "kernels") or "")
    native = _context(tmp_path, None)
    assert all(lanes.skip_reason(native, s) is None for s in ("kernels", "coverage", "probe"))


def test_a_lane_is_not_judged_by_coverage_thresholds_it_cannot_meet(tmp_path: Path) -> None:
    from xcompat.results.required import coverage_requirement

    settings = _context(tmp_path, None, MATRIX + "coverage:\n  overall: 60\n  diff: 70\n").settings
    assert coverage_requirement(settings).required
    on_lane = lanes.lane_settings(settings)
    assert not coverage_requirement(on_lane).required
    assert (on_lane.tests, on_lane.abi) == (settings.tests, settings.abi)


def test_the_isa_floor_comes_from_the_matrix_and_the_lanes_floor_wins(tmp_path: Path) -> None:
    assert _context(tmp_path, None).settings.abi.isa_floors == {"aarch64": "armv8.0-a", "x86_64": "x86-64-v2"}
    assert lanes.isa_floor(_context(tmp_path, None), "x86_64") == "x86-64-v2"
    assert lanes.isa_floor(_context(tmp_path, _lane(tmp_path, "armv8.2-a")), "aarch64") == "armv8.2-a"
    bare = MATRIX.replace("abi:\n  isa-floors: {aarch64: armv8.0-a, x86_64: x86-64-v2}\n", "")
    assert lanes.isa_floor(_context(tmp_path, None, bare), "aarch64") is None


def test_a_floor_the_scan_cannot_check_is_said_and_an_unknown_level_is_red(tmp_path: Path) -> None:
    import json

    wheel = tmp_path / "w-1.0-cp311-cp311-linux_s390x.whl"
    wheel.write_bytes(b"")
    s390x = RunLane(lane=Lane(arch=arch("s390x"), root=tmp_path, emulator=Emulator("s390x", "/x", "/q", "7.2"),
                              cpu="qemu", floor="z13", python="3.11", suite="bookworm"), package=tmp_path)
    context = _context(tmp_path, s390x)
    context.wheels = [wheel]
    skipped = lanes.isa_scan(context)
    assert skipped is not None and skipped.status == "skipped" and "no machine-code scan of s390x" in skipped.detail
    (tmp_path / "t").mkdir()
    typo = _context(tmp_path / "t", None, MATRIX.replace("x86-64-v2", "x86-64-v9").replace("armv8.0-a", "armv9-z"))
    typo.pipe.stage_dir.mkdir(parents=True)
    typo.wheels = [wheel]
    found = lanes.isa_scan(typo)  # the host's arch (x86_64 or aarch64): its floor is a typo
    assert found is not None and found.status == "failed"
    document = json.loads((typo.pipe.stage_dir / lanes.ISA_RESULT).read_text(encoding="utf-8"))
    assert document["status"] == "failed" and "which is not one of its levels" in document["summary"]


def test_an_isa_floor_for_an_unknown_arch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="isa-floors"):
        _context(tmp_path, None, MATRIX.replace("x86_64: x86-64-v2", "riscv64: rv64gc"))


def test_the_lane_runs_the_stage_command_in_the_root_at_the_floor_cpu(tmp_path: Path) -> None:
    lane = _lane(tmp_path)
    project = tmp_path / "project"
    argv = lane.command(["/usr/bin/python3", "-m", "xcompat", "test", "tests"],
                        env={"PYTHONPATH": "/site", "HOME": "/home/me"}, cwd=project, binds=[tmp_path / "out"])
    script = argv[-1]
    assert argv[:2] == ["unshare", "--mount"]
    assert "QEMU_CPU=cortex-a57" in script
    assert f"PYTHONPATH=/site:{tmp_path / 'pkg'}" in script  # the wheels, then this xcompat
    assert "HOME=/home/me" not in script  # the host's own environment stays out
    assert f"mount --bind {shlex.quote(str(tmp_path / 'out'))}" in script
    assert "/opt/xcompat-venv/bin/python -m xcompat test tests" in script
    assert lane.describe() == {"arch": "aarch64", "qemu": "7.2.22", "cpu": "cortex-a57", "floor": "armv8.0-a",
                               "root": "debian bookworm", "python": "3.11"}
    # a lane at a floor runs the tests again at the feature-rich model; that one has no second
    rich = lane.feature_rich()
    assert rich is not None and rich.describe()["cpu"] == "max" and rich.describe()["floor"] is None
    assert rich.feature_rich() is None
    assert "QEMU_CPU=max" in rich.command(["/usr/bin/python3", "-m", "xcompat"], env={}, cwd=project, binds=[])[-1]


def _test_result(path: Path, outcomes: dict[str, str], status: str, crash: str | None = None) -> None:
    from xcompat import jsonio

    counts = dict.fromkeys(("passed", "failed", "skipped", "xfailed", "xpassed", "error", "crashed", "timeout",
                            "leaked"), 0)
    tests = []
    for nodeid, outcome in outcomes.items():
        counts[outcome] += 1
        crashed = {"signal": crash, "signal_number": 4, "exit_code": None, "traceback": ""} \
            if outcome == "crashed" and crash else None
        tests.append({"nodeid": nodeid, "outcome": outcome, "duration_s": 0.1, "device": None, "message": "",
                      "output_tail": "", "crash": crashed, "leaks": [], "findings": []})
    jsonio.write_json(path, {"version": 1, "kind": "test", "cell_id": None, "status": status, "summary": status,
                             "isolation": "test", "start_method": "fork", "counts": counts, "tests": tests,
                             "findings": []}, schema="test-result")


def test_the_floor_and_feature_rich_runs_merge_into_one_result_naming_the_model_of_each_failure(
        tmp_path: Path) -> None:
    import json

    floor, rich = tmp_path / "test.json", tmp_path / "test-max.json"
    _test_result(floor, {"t::a": "passed", "t::sve": "crashed", "t::b": "passed"}, "crashed", crash="SIGILL")
    _test_result(rich, {"t::a": "passed", "t::sve": "passed", "t::b": "failed"}, "failed")
    runs = [lanes.run_entry({"cpu": "cortex-a57", "floor": "armv8.0-a"}, floor, 3.0),
            lanes.run_entry({"cpu": "max", "floor": None}, rich, 2.0)]
    assert runs[0] == {"cpu": "cortex-a57", "floor": "armv8.0-a", "status": "crashed", "seconds": 3.0,
                       "failed": ["t::sve"]}
    assert runs[1]["failed"] == ["t::b"] and runs[1]["status"] == "failed"
    lanes.merge_runs(floor, rich, runs)
    merged = json.loads(floor.read_text(encoding="utf-8"))
    found = {t["nodeid"]: (t["outcome"], t["message"]) for t in merged["tests"]}
    assert found == {"t::a": ("passed", ""),
                     "t::sve": ("crashed", "at cortex-a57 (armv8.0-a floor): crashed (SIGILL)"),
                     "t::b": ("failed", "at max (not at cortex-a57 (armv8.0-a floor)): failed")}
    assert merged["counts"]["crashed"] == 1 and merged["counts"]["failed"] == 1 and merged["counts"]["passed"] == 1
    assert merged["summary"].startswith("at cortex-a57 (armv8.0-a floor): crashed; at max: failed")
    # a run that wrote no result is said, and the floor's result stays as it was
    assert lanes.run_entry({"cpu": "max", "floor": None}, tmp_path / "none.json", 1.0)["status"] == "no result"
    before = floor.read_text(encoding="utf-8")
    lanes.merge_runs(floor, tmp_path / "none.json", runs)
    assert floor.read_text(encoding="utf-8") == before


def test_the_report_says_each_cpu_models_run() -> None:
    from xcompat.report.emulation import emulation_of
    from xcompat.results.stage_result import StageResult as Result

    runs = [{"cpu": "cortex-a57", "floor": "armv8.0-a", "status": "crashed", "seconds": 3.0, "failed": ["t::sve"]},
            {"cpu": "max", "floor": None, "status": "passed", "seconds": 2.0, "failed": []}, "junk"]
    data = {"emulation": {"arch": "aarch64", "qemu": "7.2.22", "cpu": "cortex-a57", "floor": "armv8.0-a",
                          "runs": runs}}
    found = emulation_of([Result(kind="test", cell_id=None, status="crashed", summary="", source="test.json",
                                 data=data)])
    assert found is not None
    assert found.label.endswith("tests at cortex-a57 (armv8.0-a floor): crashed (t::sve); at max: passed")
    assert found.to_dict()["runs"][0] == {"cpu": "cortex-a57", "floor": "armv8.0-a", "status": "crashed",
                                          "failed": ["t::sve"]}
