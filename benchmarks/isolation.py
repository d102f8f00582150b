"""Per-test cost of isolation in ``xcompat test``: real third-party suites, and small torch tests.

**Real suites** (``--suites real``): the released sdists of markupsafe, simplejson (tests inside
the package, run with ``--pyargs`` against the wheel) and ujson are downloaded with
``pip download``, built with ``pip wheel`` and cached (tests/helpers/real_projects.py). Each
suite runs, interleaved, ``--repeats`` times in four ways:

* plain ``python -m pytest``: the alternative, no isolation;
* ``xcompat test --isolate file``: one process per test file;
* ``xcompat test --isolate test``: one process per test (the default);
* the same with ``XCOMPAT_TEST_ZYGOTE=0``: each test process forked by the warm parent itself,
  not by the zygote (``xcompat.isolate.zygote``), to show what the zygote buys.

Printed per suite: the run loop's time per test (a plugin wraps ``pytest_runtestloop`` in the
parent; start-up and collection are paid once and excluded), the whole command's wall time,
the isolation overhead per test and the ratios to plain pytest. The same tests must pass in
every mode. Targets (suites without torch): ``--isolate test`` at most 10 ms per test over
plain pytest, ``--isolate file`` at most 1.2x plain pytest.

In the same rounds, a generated suite of 40 files with one trivial test each runs under plain
pytest and ``--isolate file``: there every test is a process of its own, so the difference per
file is what one test process costs on this machine (the fork, the first test's copy-on-write
faults, the hand-over, the exit). Times the suite's number of files, that is the lowest
``--isolate file`` ratio this machine allows the suite, whatever else is done; it is printed
next to the measured one, with the page faults one test process takes and what a page fault
costs here (measured first: a forked process writing pages it shares with its parent). Those
faults are most of a test process's cost, and a virtual machine's are several times dearer than
bare metal's, which is why the floor differs so much between machines.

**Torch tests** (``--suites torch``): a generated suite of small torch tests (a 4x4 matmul and
``torch.testing.assert_close`` each), compared in one run:

* in-process (``--isolate none``): no isolation, the floor;
* fork per test from the warm parent (``--isolate test``, the default);
* fork per test from a parent that did not warm torch (``--no-warm-torch``): what the
  warm-up buys;
* a fresh interpreter per test (``python -c "import torch; ..."``, and ``python -m pytest
  FILE::TEST``): the naive way.

Goal there: fork per test under 25 ms and at least 100x cheaper than a fresh interpreter.

    python benchmarks/isolation.py [--suites all|real|torch] [--projects markupsafe,simplejson,ujson]
                                   [--tests 120] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers.real_projects: the cached real-project builds
sys.path.insert(1, str(REPO / "src"))  # xcompat itself, installed or not

from xcompat.cpus import usable_cpus

TEST_BODY = """
    a = torch.arange(16, dtype=torch.float32).reshape(4, 4) + {i}
    torch.testing.assert_close(a @ torch.eye(4), a)
"""
CONFTEST = """
import json, os, resource, time
import pytest


def _cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    start, cpu = time.perf_counter(), _cpu()
    try:
        return (yield)
    finally:
        if os.getpid() == PARENT:
            with open(os.environ["BENCH_OUT"], "w") as fh:
                json.dump({"loop_s": time.perf_counter() - start, "cpu_s": _cpu() - cpu,
                           "n": len(session.items)}, fh)


PARENT = os.getpid()
"""


def write_suite(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(CONFTEST)
    lines = ["import torch", ""]
    for i in range(n):
        lines.append(f"def test_{i}():" + TEST_BODY.format(i=i))
    (folder / "test_bench.py").write_text("\n".join(lines))
    return folder


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO / "src") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def loop_per_test(suite: Path, extra: list[str], repeats: int) -> float:
    """Median per-test seconds of the run loop under ``xcompat test EXTRA``."""
    return loop_and_cpu_per_test(suite, extra, repeats)[0]


def loop_and_cpu_per_test(suite: Path, extra: list[str], repeats: int) -> tuple[float, float]:
    """Median per-test seconds of the run loop under ``xcompat test EXTRA``: wall, and CPU (the
    parent's and every test process's, user + system)."""
    samples = []
    cpu_samples = []
    for _ in range(repeats):
        out = suite / "bench.json"
        cmd = [
            sys.executable,
            "-m",
            "xcompat",
            "test",
            str(suite),
            "--timeout",
            "120",
            *extra,
            "--",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
        ]
        proc = subprocess.run(
            cmd, env={**env(), "BENCH_OUT": str(out)}, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise SystemExit(f"run failed ({' '.join(extra)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        data = json.loads(out.read_text())
        samples.append(data["loop_s"] / data["n"])
        cpu_samples.append(data["cpu_s"] / data["n"])
    return statistics.median(samples), statistics.median(cpu_samples)


def fresh_interpreter(repeats: int) -> float:
    code = "import torch\n" + "def t():" + TEST_BODY.format(i=0) + "t()\n"
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env())
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def fresh_pytest(suite: Path, repeats: int) -> float:
    samples = []
    for i in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"{suite}/test_bench.py::test_{i}",
            ],
            check=True,
            env={**env(), "BENCH_OUT": str(suite / "fresh.json")},
            capture_output=True,
            cwd=suite,
        )
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


# Loaded into the parent with -p: times pytest's run loop and counts outcomes as the parent
# sees them (xcompat replays every child's reports into the parent's hooks).
LOOP_PLUGIN = """
import json, os, time
import pytest

PARENT = os.getpid()
_outcomes = {}


def pytest_runtest_logreport(report):
    if os.getpid() != PARENT:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        key = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        _outcomes[key] = _outcomes.get(key, 0) + 1


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        if os.getpid() == PARENT:
            with open(os.environ["BENCH_OUT"], "w") as fh:
                json.dump({"loop_s": time.perf_counter() - start, "n": len(session.items),
                           "files": len({item.path for item in session.items}), "outcomes": _outcomes}, fh)
"""
MODES = ("plain pytest", "--isolate file", "--isolate test", "test, no zygote")
# "test, no zygote": --isolate test with every test process forked by the warm parent itself
# (XCOMPAT_TEST_ZYGOTE=0), what the zygote (xcompat.isolate.zygote) replaced.


def real_suite_run(mode: str, *, cwd: Path, targets: list[str], pyargs: bool, run_env: dict[str, str],
                   out: Path) -> dict:
    lean = ["-p", "no:cacheprovider", "-p", "bench_loop"]
    pytest_args = [*lean, *(["--pyargs"] if pyargs else [])]
    if mode == "plain pytest":
        cmd = [sys.executable, "-m", "pytest", "-q", *pytest_args, *targets]
    else:
        isolation = "test" if mode.startswith("test") else mode.split()[-1]
        cmd = [sys.executable, "-m", "xcompat", "test", *targets, "--isolate", isolation,
               "--timeout", "120", "--", "-q", *pytest_args]
        if "no zygote" in mode:
            run_env = {**run_env, "XCOMPAT_TEST_ZYGOTE": "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env={**run_env, "BENCH_OUT": str(out)}, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1) or not out.exists():
        raise SystemExit(f"{mode} failed ({' '.join(cmd)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    data = json.loads(out.read_text())
    out.unlink()
    data["wall_s"] = wall
    data["cpu_s"] = cpu  # the command and every process it started, user + system
    data["faults"] = after.ru_minflt - before.ru_minflt  # page faults of the same processes
    return data


FLOOR_FILES = 40
FLOOR_MODES = ("plain pytest", "--isolate file")


def write_floor_suite(folder: Path, files: int) -> Path:
    """``files`` test files of one trivial test each: with ``--isolate file`` every test is a
    process, so the difference to plain pytest per file is what one test process costs."""
    tests = folder / "tests"
    tests.mkdir(parents=True)
    for i in range(files):
        (tests / f"test_floor_{i}.py").write_text("def test_trivial():\n    assert sum(range(10)) == 45\n")
    return folder


def page_fault_costs(pages: int = 8192, rounds: int = 3) -> tuple[float, float]:
    """Microseconds per page fault on this machine, median of ``rounds`` forks: a copy-on-write
    fault (a forked process writing a page it shares with its parent, what a test process pays
    for every page of the warm parent its tests touch) and a first-touch fault (new memory).

    Most of what one test process costs is these faults: on a virtual machine they cost several
    times what they cost on bare metal, and the floor printed per suite follows them."""
    import mmap

    shared = mmap.mmap(-1, pages * mmap.PAGESIZE)
    for offset in range(0, len(shared), mmap.PAGESIZE):
        shared[offset] = 1
    cow, fresh = [], []
    for _ in range(rounds):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child measures and reports; it never returns
            try:
                start = time.perf_counter()
                for offset in range(0, len(shared), mmap.PAGESIZE):
                    shared[offset] = 2
                middle = time.perf_counter()
                new = mmap.mmap(-1, pages * mmap.PAGESIZE)
                for offset in range(0, len(new), mmap.PAGESIZE):
                    new[offset] = 2
                end = time.perf_counter()
                os.write(write_fd, f"{middle - start} {end - middle}".encode())
            finally:
                os._exit(0)
        os.close(write_fd)
        answer = os.read(read_fd, 100).split()
        os.close(read_fd)
        os.waitpid(pid, 0)
        cow.append(float(answer[0]) / pages * 1e6)
        fresh.append(float(answer[1]) / pages * 1e6)
    shared.close()
    return statistics.median(cow), statistics.median(fresh)


def rotated(modes: tuple[str, ...], round_index: int) -> tuple[str, ...]:
    """The modes in the order they run in round ``round_index``: the order rotates from round to
    round, since a run's place in its round (which run came before it) moved simplejson's
    --isolate file ratio by 9% in one comparison."""
    shift = round_index % len(modes)
    return modes[shift:] + modes[:shift]


def bench_real_suites(repeats: int, tmp: Path, projects: list[str]) -> list[str]:
    from tests.helpers.real_projects import PROJECTS, built_wheel, installed, source_tree

    plugin_dir = tmp / "plugin"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "bench_loop.py").write_text(LOOP_PLUGIN)
    floor = write_floor_suite(tmp / "floor", FLOOR_FILES)
    floor_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(plugin_dir)])}
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cow_us, fresh_us = page_fault_costs()
    lines = [f"real suites, median of {repeats} interleaved runs; {usable_cpus()} CPUs, load average {load}",
             "(on a loaded machine the wall times mostly measure waiting for a CPU; CPU time does not)",
             (f"page faults here: {cow_us:.2f} us per copy-on-write fault, {fresh_us:.2f} us per first"
              " touch of new memory")]
    verdicts = []
    for name in projects:
        project = PROJECTS[name]
        site = installed(built_wheel(project, project.version))
        tree = source_tree(project, project.version, tmp / name)
        if project.in_package:  # run against the installed wheel, from a folder without the sources
            cwd, targets = tmp / "empty", [f"{project.import_name}.tests"]
            cwd.mkdir(exist_ok=True)
        else:
            cwd, targets = tree, [project.tests]
        run_env = dict(os.environ)
        run_env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "src"), str(plugin_dir)])
        samples: dict[str, list[dict]] = {mode: [] for mode in MODES}
        floor_samples: dict[str, list[dict]] = {mode: [] for mode in FLOOR_MODES}
        for round_index in range(repeats):
            for mode in rotated(MODES, round_index):
                samples[mode].append(real_suite_run(mode, cwd=cwd, targets=targets, pyargs=project.in_package,
                                                    run_env=run_env, out=tmp / "bench.json"))
            for mode in rotated(FLOOR_MODES, round_index):  # in the same rounds: the speed drifts
                floor_samples[mode].append(real_suite_run(mode, cwd=floor, targets=["tests"], pyargs=False,
                                                          run_env=floor_env, out=tmp / "bench.json"))
        outcomes = {mode: samples[mode][0]["outcomes"] for mode in MODES}
        if len({json.dumps(o, sort_keys=True) for o in outcomes.values()}) != 1:
            raise SystemExit(f"{name}: outcomes differ between modes: {outcomes}")
        n = samples["plain pytest"][0]["n"]
        loop = {mode: statistics.median(s["loop_s"] for s in samples[mode]) for mode in MODES}
        wall = {mode: statistics.median(s["wall_s"] for s in samples[mode]) for mode in MODES}
        cpu = {mode: statistics.median(s["cpu_s"] for s in samples[mode]) for mode in MODES}
        per_test = {mode: loop[mode] / n for mode in MODES}
        overhead_ms = (per_test["--isolate test"] - per_test["plain pytest"]) * 1000
        cpu_overhead_ms = (cpu["--isolate test"] - cpu["plain pytest"]) / n * 1000
        file_ratio = loop["--isolate file"] / loop["plain pytest"]
        counts = ", ".join(f"{v} {k}" for k, v in sorted(outcomes["plain pytest"].items()))
        lines.append(f"  {name} {project.version}: {n} tests ({counts}), same outcomes in every mode")
        lines.append(f"    {'':16s} {'loop wall':>12s} {'command wall':>13s} {'command CPU':>12s}")
        for mode in MODES:
            lines.append(f"    {mode:16s} {per_test[mode] * 1000:7.2f} ms/test {wall[mode]:11.2f} s"
                         f" {cpu[mode]:11.2f} s")
        lines.append(f"    --isolate test over plain pytest: {overhead_ms:.1f} ms/test of loop wall time,"
                     f" {cpu_overhead_ms:.1f} ms/test of CPU (target <= 10 ms)")
        file_wall_ratio = wall["--isolate file"] / wall["plain pytest"]
        # Each round's own ratio too: the machine's speed drifts between rounds, and a ratio near
        # the target means little when the rounds spread around it.
        rounds = sorted(isolated["loop_s"] / plain["loop_s"]
                        for isolated, plain in zip(samples["--isolate file"], samples["plain pytest"]))
        lines.append(f"    --isolate file / plain pytest:    {file_ratio:.2f}x loop wall"
                     f" (each round: {rounds[0]:.2f}x to {rounds[-1]:.2f}x),"
                     f" {file_wall_ratio:.2f}x command wall,"
                     f" {cpu['--isolate file'] / cpu['plain pytest']:.2f}x command CPU (target <= 1.2x)")
        for mode in FLOOR_MODES:  # a floor of failing or missing tests would measure nothing
            if any(s["outcomes"] != {"passed": FLOOR_FILES} for s in floor_samples[mode]):
                raise SystemExit(f"floor suite under {mode}: {floor_samples[mode][0]['outcomes']}")
        floor_loop = {mode: statistics.median(s["loop_s"] for s in floor_samples[mode]) for mode in FLOOR_MODES}
        process_s = (floor_loop["--isolate file"] - floor_loop["plain pytest"]) / FLOOR_FILES
        floor_faults = {mode: statistics.median(s["faults"] for s in floor_samples[mode]) for mode in FLOOR_MODES}
        process_faults = (floor_faults["--isolate file"] - floor_faults["plain pytest"]) / FLOOR_FILES
        files = samples["plain pytest"][0]["files"]
        floor_ratio = (loop["plain pytest"] + files * process_s) / loop["plain pytest"]
        lines.append(f"    one test process costs {process_s * 1000:.1f} ms of loop wall time here ({FLOOR_FILES} files of"
                     f" one trivial test, same rounds) and {process_faults:.0f} page faults (at {cow_us:.2f} us"
                     f" each, {process_faults * cow_us / 1000:.1f} ms): with {files} files, --isolate file cannot"
                     f" go below {floor_ratio:.2f}x on this machine")
        lines.append(f"    --isolate test / plain pytest:    {loop['--isolate test'] / loop['plain pytest']:.1f}x loop wall,"
                     f" {wall['--isolate test'] / wall['plain pytest']:.1f}x command wall")
        no_zygote_ms = (per_test["test, no zygote"] - per_test["plain pytest"]) * 1000
        lines.append(f"    forked by the parent, no zygote:  {no_zygote_ms:.1f} ms/test over plain pytest;"
                     f" the zygote's run loop is {loop['--isolate test'] / loop['test, no zygote']:.2f}x its time")
        verdicts.append((name, overhead_ms <= 10, file_ratio <= 1.2, floor_ratio, file_wall_ratio <= 1.2))
    # The targets are judged on the run loop (start-up and collection are the same work in both
    # and would dilute the ratio); the command's wall time, what a user waits for, is shown too.
    lines.append("targets met (run loop): " + ", ".join(
        f"{name} test:{'yes' if ok_test else 'NO'} file:{'yes' if ok_file else 'NO'} (floor {floor:.2f}x;"
        f" command wall {'within' if ok_wall else 'over'} 1.2x)"
        for name, ok_test, ok_file, floor, ok_wall in verdicts))
    return lines


def bench_torch(args: argparse.Namespace, tmp: Path) -> list[str]:
    suite = write_suite(tmp / "suite", args.tests)
    small = write_suite(tmp / "small", 10)
    inproc, inproc_cpu = loop_and_cpu_per_test(suite, ["--isolate", "none"], args.repeats)
    fork, fork_cpu = loop_and_cpu_per_test(suite, ["--isolate", "test"], args.repeats)
    cold = loop_per_test(small, ["--isolate", "test", "--no-warm-torch"], 1)
    fresh = fresh_interpreter(max(args.repeats, 3))
    fresh_pt = fresh_pytest(small, max(args.repeats, 3))
    overhead = fork - inproc
    rows = [
        ("in-process (--isolate none)", inproc),
        ("fork per test, warm parent", fork),
        ("fork per test, parent not warmed", cold),
        ("fresh interpreter (python -c)", fresh),
        ("fresh pytest per test", fresh_pt),
    ]
    lines = [f"per-test wall time, {args.tests} small torch tests, median of {args.repeats} runs"]
    lines += [f"  {name:34s} {value * 1000:9.1f} ms" for name, value in rows]
    lines.append(f"isolation overhead (fork - in-process): {overhead * 1000:.1f} ms per test of wall time,"
                 f" {(fork_cpu - inproc_cpu) * 1000:.1f} ms of CPU (goal < 25 ms)")
    lines.append(f"ratio fresh interpreter / fork:         {fresh / fork:.0f}x (goal >= 100x)")
    lines.append(f"ratio fresh pytest / fork:              {fresh_pt / fork:.0f}x")
    lines.append(f"ratio unwarmed fork / warm fork:        {cold / fork:.1f}x")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", choices=("all", "real", "torch"), default="all")
    parser.add_argument("--projects", default="markupsafe,simplejson,ujson",
                        help="real suites to run, comma-separated")
    parser.add_argument("--tests", type=int, default=120, help="size of the generated torch suite")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    known = ("markupsafe", "simplejson", "ujson")
    unknown = sorted(set(args.projects.split(",")) - set(known))
    if unknown:
        parser.error(f"--projects: unknown suite(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-isolation-") as tmp:
        if args.suites in ("all", "real"):
            for line in bench_real_suites(args.repeats, Path(tmp) / "real", args.projects.split(",")):
                print(line, flush=True)
        if args.suites in ("all", "torch"):
            (Path(tmp) / "torch").mkdir()
            for line in bench_torch(args, Path(tmp) / "torch"):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
