#!/usr/bin/env python3
"""``make device-check``: one bounded run of xcompat's GPU lane on a machine with a GPU.

Meant for a GPU runner that may have no package registry: it uses the Python and the CUDA
build of torch already installed there (``DEVICE_CHECK_PYTHON`` picks another interpreter)
and runs xcompat from this checkout's ``src/``. It installs nothing: a package missing
there (pyelftools, jsonschema, ...) fails the steps that need it, with the import error in
their logs; bring such wheels along and put them on ``PYTHONPATH``.

Steps (each with its own timeout, inside a total budget; a failed step does not stop the
run; every step's output goes to ``$OUT/logs/<step>.log``):

1. ``environment``: nvidia-smi, torch and its CUDA, the toolkit xcompat finds, compute-sanitizer
2. ``probe``: ``xcompat probe`` -> ``$OUT/probe.json``
3. ``kernels_cold`` / ``kernels_warm``: ``xcompat kernels run --backend cuda`` with an empty
   and then a filled build cache -> ``$OUT/kernels.json`` (suite times, cold and warm)
4. ``device_tests``: ``pytest tests/device`` (the quick ones; the sample-wheel test is left out)
5. ``isolation``: ``xcompat test`` on tests/device/isolation/gpu_isolation_cases.py with
   device leak checks: a pinned test passes, a leak is reported, a device-side assert is
   contained and the next test passes -> ``$OUT/isolation.json``
6. ``sanitizer_oob``: compute-sanitizer memcheck on a deliberate out-of-bounds write
   (skipped with the tool's own reason where it cannot run)

Without a GPU every step that needs one is recorded as skipped with the reason and the
script exits 0: that is the dry run. With a GPU it exits 1 when a step failed.
``$OUT/device-check.json`` (schema ``device-check``) holds every step's status, reason,
duration and log path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOTAL_BUDGET_S = float(os.environ.get("DEVICE_CHECK_BUDGET_S", "285"))
ISOLATION_CASES = REPO / "tests" / "device" / "isolation" / "gpu_isolation_cases.py"
OOB_SOURCE = REPO / "tests" / "device" / "isolation" / "oob_write.cu"


@dataclass
class Step:
    name: str
    status: str = "skipped"  # passed | failed | skipped | timeout
    reason: str = ""
    seconds: float = 0.0
    log: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


class DeviceCheck:
    def __init__(self, out: Path, python: str) -> None:
        self.out = out
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.python = python
        self.started = time.monotonic()
        self.steps: list[Step] = []
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), str(REPO),
                                                                self.env.get("PYTHONPATH", "")]))
        self.env["XCOMPAT_CACHE"] = str(out / "cache")
        self.env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        self.env.setdefault("MAX_JOBS", str(max(2, min(8, os.cpu_count() or 2))))  # the cold kernel build

    def remaining(self) -> float:
        return TOTAL_BUDGET_S - (time.monotonic() - self.started)

    def run(self, step: Step, argv: Sequence[str], timeout: float, *, env: dict[str, str] | None = None,
            cwd: Path = REPO) -> subprocess.CompletedProcess[str] | None:
        """Run one command with min(timeout, what is left of the budget); log everything."""
        budget = min(timeout, self.remaining())
        log = self.logs / f"{step.name}.log"
        step.log = str(log.relative_to(self.out))
        if budget < 5:
            step.status, step.reason = "skipped", "the device check's time budget is spent"
            log.write_text(step.reason + "\n")
            return None
        start = time.monotonic()
        try:
            proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=budget, env=env or self.env,
                                  cwd=cwd, check=False)
        except subprocess.TimeoutExpired as exc:
            step.seconds = round(time.monotonic() - start, 2)
            step.status, step.reason = "timeout", f"killed after {budget:.0f} s"
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            log.write_text(f"$ {' '.join(argv)}\n{out}\n{err}\n[timeout after {budget:.0f} s]\n")
            return None
        except OSError as exc:
            step.seconds = round(time.monotonic() - start, 2)
            step.status, step.reason = "failed", f"could not start {argv[0]}: {exc}"
            log.write_text(step.reason + "\n")
            return None
        step.seconds = round(time.monotonic() - start, 2)
        log.write_text(f"$ {' '.join(argv)}\n[exit {proc.returncode}]\n--- stdout\n{proc.stdout}\n--- stderr\n"
                       f"{proc.stderr}\n")
        return proc

    def step(self, name: str, fn: Callable[[Step], None]) -> Step:
        step = Step(name=name)
        start = time.monotonic()
        try:
            fn(step)
        except Exception as exc:  # noqa: BLE001 - a broken step is recorded, the run goes on
            step.status, step.reason = "failed", f"{type(exc).__name__}: {exc}"
        if not step.seconds:
            step.seconds = round(time.monotonic() - start, 2)
        self.steps.append(step)
        print(f"device-check: {name:16} {step.status:8} {step.seconds:7.1f} s  {step.reason}", flush=True)
        return step

    def xcompat(self, *args: str) -> list[str]:
        return [self.python, "-m", "xcompat", *args]


def _tail(text: str, lines: int = 3) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])[:400]


def gpu_presence() -> tuple[bool, str]:
    """Whether a CUDA GPU is visible, without creating a context (NVML, else nvidia-smi)."""
    sys.path.insert(0, str(REPO / "src"))
    try:
        from xcompat.devices import driver

        version, how = driver.cuda_driver_version()
        if version is None:
            return False, f"no GPU: {how}"
        devices, how_dev = driver.nvml_devices()
        if devices:
            names = ", ".join(f"{d['name']} ({d['arch']})" for d in devices)
            return True, f"{len(devices)} GPU(s): {names}; driver CUDA {version}"
        if devices is not None:
            return False, f"no GPU: driver CUDA {version} but NVML lists none"
    except Exception as exc:  # noqa: BLE001 - fall back to nvidia-smi
        how_dev = f"NVML check failed: {exc}"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False, f"no GPU: {how_dev}; no nvidia-smi"
    proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode == 0 and "GPU" in proc.stdout:
        return True, proc.stdout.strip().splitlines()[0]
    return False, f"no GPU: nvidia-smi -L: {_tail(proc.stdout + proc.stderr, 1) or 'no device'}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = Path(os.environ.get("OUT") or (args[0] if args else REPO / ".xcompat-out" / "device-check")).resolve()
    python = os.environ.get("DEVICE_CHECK_PYTHON") or sys.executable
    check = DeviceCheck(out, python)
    has_gpu, gpu_reason = gpu_presence()
    no_gpu = None if has_gpu else gpu_reason

    def environment(step: Step) -> None:
        code = ("import json, sys\nfrom xcompat.devices.toolkit import find_cuda_toolkit, find_compute_sanitizer\n"
                "info = {'python': sys.version.split()[0]}\n"
                "try:\n    import torch\n    info.update(torch=torch.__version__, torch_cuda=torch.version.cuda)\n"
                "except Exception as exc:\n    info.update(torch=None, torch_error=str(exc))\n"
                "s = find_cuda_toolkit(torch_cuda=info.get('torch_cuda'))\n"
                "info.update(toolkit=s.toolkit.to_dict() if s.toolkit else None, toolkit_rejected=list(s.rejected),\n"
                "            compute_sanitizer=find_compute_sanitizer(__import__('os').environ))\n"
                "print(json.dumps(info))\n")
        proc = check.run(step, [python, "-c", code], 60)
        if proc is None:
            return
        if proc.returncode != 0:
            step.status, step.reason = "failed", _tail(proc.stderr)
            return
        step.data = json.loads(proc.stdout.strip().splitlines()[-1])
        step.data["gpu"] = gpu_reason
        step.status = "passed"
        step.reason = (f"python {step.data['python']}, torch {step.data.get('torch')} "
                       f"(CUDA {step.data.get('torch_cuda')}); {gpu_reason}")

    def probe(step: Step) -> None:
        proc = check.run(step, check.xcompat("probe", "--json", "-o", str(out / "probe.json")), 60)
        if proc is not None:
            step.status = "passed" if proc.returncode == 0 else "failed"
            step.reason = _tail(proc.stderr, 1) if proc.returncode else "probe.json written"

    def kernels(step: Step, label: str) -> None:
        if no_gpu:
            step.reason = no_gpu
            return
        proc = check.run(step, check.xcompat("kernels", "run", "--backend", "cuda", "--json",
                                             str(out / "kernels.json")), 170 if label == "cold" else 90)
        if proc is None:
            return
        step.status = "passed" if proc.returncode == 0 else "failed"
        try:
            doc = json.loads((out / "kernels.json").read_text())
            step.data = {"summary": doc.get("summary"), "duration_seconds": doc.get("duration_seconds"),
                         "build_seconds": (doc.get("build") or {}).get("seconds"),
                         "cached": (doc.get("build") or {}).get("cached")}
            step.reason = str(doc.get("summary"))
        except (OSError, ValueError):
            step.reason = _tail(proc.stderr)

    def device_tests(step: Step) -> None:
        if no_gpu:
            step.reason = no_gpu
            return
        proc = check.run(step, [python, "-m", "pytest", "tests/device", "-q", "-p", "no:cacheprovider",
                                "-m", "device and not slow", "--ignore=tests/device/isolation"], 90)
        if proc is not None:
            # pytest exit 5 = nothing ran: not a pass
            step.status = "passed" if proc.returncode == 0 else "failed"
            step.reason = _tail(proc.stdout, 1)

    def isolation(step: Step) -> None:
        if no_gpu:
            step.reason = no_gpu
            return
        result = out / "isolation.json"
        proc = check.run(step, check.xcompat("test", str(ISOLATION_CASES), "--isolate", "test", "--leaks", "device",
                                             "--leak-repeat", "3", "--timeout", "60", "--json", str(result)), 120)
        if proc is None:
            return
        try:
            doc = json.loads(result.read_text())
        except (OSError, ValueError):
            step.status, step.reason = "failed", f"no isolation.json: {_tail(proc.stderr)}"
            return
        got = {t["nodeid"].rsplit("::", 1)[-1]: t["outcome"] for t in doc.get("tests", [])}
        expected = {"test_pinned_to_one_gpu": {"passed"}, "test_leaks_device_memory": {"leaked"},
                    "test_device_side_assert": {"crashed", "failed"}, "test_gpu_works_after_the_assert": {"passed"},
                    "test_backward_on_the_gpu": {"passed"}}
        wrong = [f"{n}: {got.get(n)} (expected {'/'.join(sorted(o))})" for n, o in expected.items()
                 if got.get(n) not in o]
        per_test = [t["duration_s"] for t in doc.get("tests", []) if t.get("outcome") == "passed"]
        step.data = {"outcomes": got, "per_test_seconds": per_test, "devices": doc.get("devices")}
        step.status = "failed" if wrong else "passed"
        step.reason = "; ".join(wrong) if wrong else "pinned test passed, leak reported, device assert contained, backward ran on the GPU"

    def sanitizer(step: Step) -> None:
        if no_gpu:
            step.reason = no_gpu
            return
        sys.path.insert(0, str(REPO / "src"))
        from xcompat.devices.toolkit import find_compute_sanitizer, find_cuda_toolkit

        tool = find_compute_sanitizer(check.env)
        toolkit = find_cuda_toolkit(check.env).toolkit
        if tool is None or toolkit is None:
            step.reason = "no compute-sanitizer" if tool is None else "no CUDA toolkit to build the test program"
            return
        exe = out / "oob_write"
        build = check.run(step, [str(toolkit.nvcc), "-O0", "-lineinfo", "-cudart", "static", f"-L{toolkit.lib_dir}",
                                 str(OOB_SOURCE), "-o", str(exe)], 90)
        if build is None or build.returncode != 0:
            step.status, step.reason = "failed", f"nvcc failed: {_tail(build.stderr) if build else step.reason}"
            return
        proc = check.run(step, [tool, "--tool", "memcheck", "--error-exitcode", "17", str(exe)], 60)
        if proc is None:
            return
        text = proc.stdout + proc.stderr
        unsupported = [ln for ln in text.splitlines() if "not supported" in ln.lower() or "unsupported" in ln.lower()]
        if proc.returncode != 17 and unsupported:
            step.status, step.reason = "skipped", f"compute-sanitizer: {unsupported[0].strip()[:200]}"
        elif proc.returncode == 17 and "Invalid __global__ write" in text:
            step.status, step.reason = "passed", "memcheck reported the out-of-bounds write and exited 17"
        else:
            step.status, step.reason = "failed", f"exit {proc.returncode}, expected 17: {_tail(text)}"

    check.step("environment", environment)
    check.step("probe", probe)
    check.step("kernels_cold", lambda s: kernels(s, "cold"))
    check.step("kernels_warm", lambda s: kernels(s, "warm"))
    check.step("device_tests", device_tests)
    check.step("isolation", isolation)
    check.step("sanitizer_oob", sanitizer)

    failed = [s.name for s in check.steps if s.status in ("failed", "timeout")]
    status = "failed" if failed else ("skipped" if no_gpu else "passed")
    doc = {
        "version": 1,
        "kind": "device-check",
        "status": status,
        "summary": (no_gpu + "; GPU steps skipped" if no_gpu and not failed else
                    f"failed: {', '.join(failed)}" if failed else f"all steps passed on {gpu_reason}"),
        "gpu": {"present": has_gpu, "reason": gpu_reason},
        "budget_s": TOTAL_BUDGET_S,
        "duration_s": round(time.monotonic() - check.started, 2),
        "steps": [asdict(s) for s in check.steps],
    }
    (out / "device-check.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"device-check: {status}: {doc['summary']} ({out / 'device-check.json'})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
