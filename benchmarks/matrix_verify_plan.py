"""Whole-process timings of `xcompat matrix verify` + `xcompat matrix plan` on a generated
1,000-cell matrix, and of `xcompat --help`, each beside `ssh-keygen -Y verify` on the same
file in the same run.

    python benchmarks/matrix_verify_plan.py [--runs N]

Prints median and best wall times (ms) and the ratios. Needs ssh-keygen.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MATRIX = """\
xcompat: 1
repo: bench/matrix
serial: 1
python: ["3.10", "3.11", "3.12", "3.13", "3.14"]
platforms:
  linux:
    archs: [x86_64, aarch64]
  macos:
    archs: [arm64, x86_64]
  windows:
    archs: [AMD64]
backends:
  cpu:
    required: true
frameworks:
  torch: ["2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.13"]
  numpy: ["1.26", "2.0", "2.1", "2.2", "2.3"]
"""


CPU: dict[str, list[float]] = {}


def timed(
    cmd: list[str], runs: int, stdin: Path | None = None, env: dict[str, str] | None = None, name: str = ""
) -> list[float]:
    """Wall times; the child's CPU time (user+sys, less sensitive to a busy machine) goes to CPU[name]."""
    times = []
    for _ in range(runs):
        with open(stdin or os.devnull, "rb") as fh:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(
                cmd, stdin=fh, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False
            )
            times.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            CPU.setdefault(name, []).append(cpu)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        print("ssh-keygen is required for the comparison", file=sys.stderr)
        return 5
    xcompat = shutil.which("xcompat", path=str(Path(sys.executable).parent)) or shutil.which("xcompat")
    base = [xcompat] if xcompat else [sys.executable, "-m", "xcompat"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_"))}

    with tempfile.TemporaryDirectory(prefix="xcompat-bench-") as tmp:
        d = Path(tmp)
        matrix = d / "matrix.yml"
        matrix.write_text(MATRIX)
        subprocess.run(
            [
                keygen,
                "-q",
                "-t",
                "ecdsa",
                "-b",
                "256",
                "-N",
                "",
                "-C",
                "bench@example.org",
                "-f",
                str(d / "key"),
            ],
            check=True,
        )
        pub = " ".join((d / "key.pub").read_text().split()[:2])
        (d / "allowed_signers").write_text(f'bench@example.org namespaces="xcompat-matrix-v1" {pub}\n')
        subprocess.run(
            base + ["matrix", "sign", str(matrix), "--key", str(d / "key"), "--no-bump"],
            check=True,
            env=env,
            capture_output=True,
        )
        plan = subprocess.run(
            base + ["matrix", "plan", str(matrix)], check=True, env=env, capture_output=True
        )
        import json

        cells = json.loads(plan.stdout)["counts"]["cells"]
        assert cells == 1000, cells

        verify = base + [
            "matrix",
            "verify",
            str(matrix),
            "--allowed-signers",
            str(d / "allowed_signers"),
            "--repo",
            "bench/matrix",
        ]
        plan_cmd = base + [
            "matrix",
            "plan",
            str(matrix),
            "--format",
            "github",
            "--output",
            str(d / "plan.json"),
        ]
        keygen_verify = [
            keygen,
            "-Y",
            "verify",
            "-f",
            str(d / "allowed_signers"),
            "-I",
            "bench@example.org",
            "-n",
            "xcompat-matrix-v1",
            "-s",
            str(matrix) + ".sig",
        ]
        help_cmd = base + ["--help"]

        for cmd in (verify, plan_cmd, help_cmd):  # warm the page cache and .pyc files
            timed(cmd, 1, env=env)
        timed(keygen_verify, 1, stdin=matrix)

        rows = {}
        for _ in range(args.runs):  # interleave so that machine noise hits every command alike
            for name, cmd, stdin in (
                ("verify", verify, None),
                ("plan", plan_cmd, None),
                ("help", help_cmd, None),
                ("ssh-keygen -Y verify", keygen_verify, matrix),
            ):
                rows.setdefault(name, []).extend(timed(cmd, 1, stdin=stdin, env=env, name=name))
        rows["verify+plan"] = [a + b for a, b in zip(rows["verify"], rows["plan"])]
        CPU["verify+plan"] = [a + b for a, b in zip(CPU["verify"], CPU["plan"])]

    load = os.getloadavg()[0]
    print(
        f"1,000-cell matrix, {args.runs} runs each, whole process (ms); "
        f"load average {load:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"{'command':<24} {'wall median':>12} {'wall best':>10} {'CPU median':>11}")
    for name in ("verify", "plan", "verify+plan", "help", "ssh-keygen -Y verify"):
        t, c = rows[name], CPU[name]
        print(
            f"{name:<24} {statistics.median(t) * 1000:12.1f} {min(t) * 1000:10.1f} "
            f"{statistics.median(c) * 1000:11.1f}"
        )
    ref = statistics.median(rows["ssh-keygen -Y verify"])
    ref_cpu = statistics.median(CPU["ssh-keygen -Y verify"])
    print()
    for name in ("verify", "verify+plan", "help"):
        print(
            f"ratio {name} / ssh-keygen -Y verify: wall {statistics.median(rows[name]) / ref:.1f}x, "
            f"CPU {statistics.median(CPU[name]) / max(ref_cpu, 1e-4):.1f}x"
        )
    print(
        f"targets: verify+plan < 500 ms ({statistics.median(rows['verify+plan']) * 1000:.0f}), "
        f"--help < 150 ms ({statistics.median(rows['help']) * 1000:.0f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
