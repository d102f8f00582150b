"""``xcompat run`` on the bundled sample project, for real: build, probe, kernels, isolated
tests, ABI diff against the last release, coverage, and the three reports."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xcompat.jsonio import validate

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, sample_wheels):
    out = tmp_path_factory.mktemp("run") / "out"
    # The baseline (last release) comes from the shared sample-wheel cache, so this run
    # builds only the change under review.
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "run", "--out", str(out), "--baseline", str(sample_wheels["v1"])],
        capture_output=True, text=True, env={**os.environ, "CI": "true"}, timeout=1500,
    )
    return proc, out


def test_run_writes_all_reports_and_a_valid_summary(demo_run):
    proc, out = demo_run
    # v2 of the sample breaks its ABI on purpose: the checks fail (1), nothing errors (>1).
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name in ("report.md", "report.json", "report.html", "run.json", "plan.json", "logs"):
        assert (out / name).exists(), name
    run = json.loads((out / "run.json").read_text())
    validate("run", run)
    status = {s["name"]: s["status"] for s in run["stages"]}
    assert status == {
        "verify": "passed", "plan": "passed", "build": "passed", "baseline": "passed", "probe": "passed",
        "kernels": "failed", "test": "passed", "abi": "failed", "coverage": "passed", "report": "passed",
        "contracts-stubs": "passed", "contracts-runtime-libraries": "passed", "contracts-python-floor": "passed",
        "pythons": "skipped",
    }, run["stages"]
    assert run["cell_id"] and run["cell_id"].startswith("py3.")


def test_the_demo_report_shows_the_planted_stub_mismatch(demo_run):
    proc, out = demo_run
    report = json.loads((out / "report.json").read_text())
    stubs = next(c for c in report["contracts"] if c["kind"] == "contracts-stubs")
    assert [f["code"] for f in stubs["findings"]] == ["missing-at-runtime"]
    assert "sample_ext._core.random_seed" in stubs["findings"][0]["message"]
    assert stubs["mode"] == "report" and not stubs["counted"]  # shown, never red by default
    assert "random_seed" in (out / "report.md").read_text().replace("\\_", "_")


def test_report_names_the_abi_break_and_the_cell(demo_run):
    proc, out = demo_run
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "failure"
    md = (out / "report.md").read_text()
    assert "symbol_removed" in {f["kind"] for f in report["abi"]["findings"]}
    assert "sample_legacy_sum" in md.replace("\\_", "_")
    # the run's own verify.json (not a stage result) is passed over without a note
    assert (out / "verify.json").is_file() and not any("not a stage result" in n for n in report["notes"])
    # the signed policy applied: bumps {glibc_floor_raised: minor}
    assert all(f["required_bump"] == "minor" for f in report["abi"]["findings"] if f["kind"] == "glibc_floor_raised")
    html = (out / "report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "<script" not in html.lower()
    assert run_cell(out) in html


def test_report_names_the_planted_operator_bug_apart_from_the_runner_kernels(demo_run):
    # 1.1's CPU kernel ignores strides: the runner's kernels pass, the project's operator fails
    # on the derived non-contiguous case, and the report says which is which.
    _, out = demo_run
    kernels = json.loads((out / "kernels.json").read_text())
    validate("kernels", kernels)
    assert kernels["counts"]["failed_cases"] == 0 and kernels["operators"]["status"] == "failed"
    case = "sample_ext::scaled_add on cpu, non-contiguous, float32 (sample 1)"
    report = json.loads((out / "report.json").read_text())
    (cell,) = [c for c in report["cells"] if c["id"] == run_cell(out)]
    assert cell["kernels_tested"].startswith("runner kernels ")
    assert cell["kernels_tested"].endswith(f"; project operators 1: 0 passed, 1 failed: {case}")
    assert case in (out / "report.md").read_text().replace("\\_", "_")


def run_cell(out):
    return json.loads((out / "run.json").read_text())["cell_id"]


def test_coverage_names_python_and_native_files(demo_run):
    _, out = demo_run
    cov = json.loads((out / "coverage" / "coverage.json").read_text())
    text = json.dumps(cov)
    assert ".py" in text and (".c\"" in text or ".cpp\"" in text)


def test_summary_printed_with_report_paths(demo_run):
    proc, out = demo_run
    assert str(out / "report.html") in proc.stderr
    assert "xcompat run finished" in proc.stderr


def test_ctrl_c_leaves_no_partial_results(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("previous run")
    proc = subprocess.Popen([sys.executable, "-m", "xcompat", "run", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "CI": "true"})
    seen = []
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # wait until the build stage is running
        seen.append(line)
        if "stage 3/" in line or time.monotonic() > deadline:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + rest
    assert (out / "report.md").read_text() == "previous run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "interrupted" in rest
