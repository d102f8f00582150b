"""xcompat adopted on released PyPI projects with C extensions, step by step as docs/adopt.md says.

For each project (markupsafe keeps its tests in tests/, simplejson inside its package; torchsort is
a PyTorch C++ extension whose setup.py imports torch and adds a CUDA extension when nvcc runs,
built here for the CPU cell with a CUDA toolkit's nvcc on PATH):

1. unpack the sdist of the release under test and of the release before it (the ABI baseline);
2. ``xcompat matrix init``, a fresh ECDSA key from the real ``ssh-keygen``, ``allowed_signers``,
   ``xcompat matrix sign``;
3. ``xcompat run PROJECT --baseline PREVIOUS --out DIR``.

Checked against independent tools: the test stage's outcome for every test equals plain
pytest's on the same wheel; the ABI verdict's symbol findings equal an ``nm -D`` diff of the
extension modules' exported interface, its dependency findings name the ``Requires-Dist`` entries
that differ between the two wheels, and its actual bump follows docs/abi.md's rule for the two
version numbers. A second run with a planted failing test (and a planted
exported C function) must be red, exit 1, and name the test in report.md. Without a matrix,
``xcompat run`` stops at once with the way to write one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from tests.helpers.checkout import nvcc_path_env
from tests.helpers.real_projects import PROJECTS, RealProject, source_tree

REPO = Path(__file__).resolve().parents[2]
CELL = "py{}.{}-linux-x86_64-cpu".format(*sys.version_info[:2])
PLANTED_TEST = "test_xcompat_planted_failure"
# Plain pytest's outcome per test, folded the way pytest's summary counts them.
OUTCOME_PLUGIN = textwrap.dedent('''
    import json, os

    _outcomes = {}

    def pytest_runtest_logreport(report):
        previous = _outcomes.get(report.nodeid, "passed")
        if previous in ("failed", "error"):
            return
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            _outcomes[report.nodeid] = "failed" if report.when == "call" else "error"
        elif report.skipped and previous == "passed":
            _outcomes[report.nodeid] = "xfailed" if xfail else "skipped"
        elif report.passed and report.when == "call":
            _outcomes[report.nodeid] = "xpassed" if xfail else "passed"

    def pytest_sessionfinish(session):
        with open(os.environ["XCOMPAT_PLAIN_OUTCOMES"], "w") as out:
            json.dump(_outcomes, out)
''')

# torchsort's tests compare it with fast_soft_sort, the paper's reference code, which is on no
# package registry (torchsort's own metadata names its git repository). This conftest lets the
# test module import without it; each comparison with it then skips, saying why, while the
# gradient checks run as released. Written only where the project has no conftest of its own.
STAND_INS = {"torchsort": textwrap.dedent('''
    import sys
    import types

    import pytest

    try:
        import fast_soft_sort.pytorch_ops  # noqa: F401
    except ImportError:
        def _unavailable(*args, **kwargs):
            pytest.skip("fast_soft_sort, the reference implementation compared with, is on no package registry")

        _ops = types.ModuleType("fast_soft_sort.pytorch_ops")
        _ops.soft_rank = _ops.soft_sort = _unavailable
        _package = types.ModuleType("fast_soft_sort")
        _package.__path__ = []
        _package.pytorch_ops = _ops
        sys.modules.update({"fast_soft_sort": _package, "fast_soft_sort.pytorch_ops": _ops})
''')}
# Plain pytest without the working folder on sys.path (as `xcompat run` tests): a flat layout's
# source package must not shadow the installed wheel.
PLAIN_PYTEST = "import sys; del sys.path[0]; import pytest; sys.exit(pytest.console_main())"

pytestmark = [pytest.mark.slow, pytest.mark.network]


def _env(**extra: str) -> dict[str, str]:
    """A local run: no CI or forge variables from the calling environment."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GITLAB_", "CI_", "PYTEST_", "XCOMPAT_TIER"))}
    env.pop("CI", None)
    env["PYTHONPATH"] = str(REPO / "src")
    env.update(extra)
    return env


def xcompat(*args: str, cwd: Path, timeout: int = 900,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=_env(**(env or {})),
                          capture_output=True, text=True, timeout=timeout, check=False)


def build_env(project: RealProject) -> dict[str, str]:
    """What the run adds to the environment: for a torch extension, a CUDA toolkit's nvcc first on
    PATH (its CPU cell must hide it, or setup.py adds the CUDA extension)."""
    if not project.torch:
        return {}
    env = nvcc_path_env()
    if env is None:
        pytest.skip(f"{project.name} is checked with a CUDA toolkit's nvcc on PATH, and there is none here "
                    "(nvcc not on PATH nor in /usr/local/cuda*/bin)")
    return env


def adopt(project: RealProject, root: Path, keys: Path) -> tuple[Path, Path]:
    """The release under test with a signed matrix, and the previous release's source folder."""
    tree = source_tree(project, project.version, root)
    previous = source_tree(project, project.previous, root)
    if project.name in STAND_INS:
        conftest = tree / project.tests / "conftest.py"
        assert not conftest.exists(), f"{project.name} now ships {conftest.name}: review the stand-in"
        conftest.write_text(STAND_INS[project.name])
    init = xcompat("matrix", "init", str(tree), "--repo", f"pypi/{project.name}", cwd=root)
    assert init.returncode == 0, init.stderr
    key = keys / "maintainer"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "maintainer@example.org",
                        "-f", str(key)], check=True)
    public = (keys / "maintainer.pub").read_text().strip()
    (tree / ".xcompat" / "allowed_signers").write_text(
        f'maintainer@example.org namespaces="xcompat-matrix-v1" {public}\n')
    sign = xcompat("matrix", "sign", ".xcompat/matrix.yml", "--key", str(key), cwd=tree)
    assert sign.returncode == 0, sign.stderr
    verify = xcompat("matrix", "verify", ".xcompat/matrix.yml", "--allowed-signers", ".xcompat/allowed_signers",
                     cwd=tree)
    assert verify.returncode == 0, verify.stderr
    return tree, previous


def plain_pytest_outcomes(project: RealProject, tree: Path, wheel: Path, scratch: Path) -> dict[str, str]:
    """Plain pytest on the same wheel, from the project's own test paths: nodeid -> outcome."""
    site = scratch / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                    "--target", str(site), str(wheel)], check=True)
    plugin = scratch / "plugin"
    plugin.mkdir()
    (plugin / "plain_outcomes.py").write_text(OUTCOME_PLUGIN)
    listing = scratch / "plain.json"
    if project.in_package:
        cwd, args = scratch, ["--pyargs", project.tests.replace("/", ".")]
    else:
        cwd, args = tree, [project.tests]
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN_PYTEST, "-q", "-p", "no:cacheprovider", "-p", "plain_outcomes", *args],
        cwd=cwd, env=_env(PYTHONPATH=os.pathsep.join([str(site), str(plugin)]),
                          XCOMPAT_PLAIN_OUTCOMES=str(listing)),
        capture_output=True, text=True, timeout=900, check=False)
    assert listing.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(listing.read_text())


def by_test(nodeids_to_outcome: dict[str, str], tests_folder: str) -> dict[str, str]:
    """Keyed from the tests folder on, so both runs' node ids (rooted differently) compare."""
    leaf = tests_folder.rsplit("/", 1)[-1] + "/"
    out = {}
    for nodeid, outcome in nodeids_to_outcome.items():
        path, _, rest = nodeid.partition("::")
        key = path[path.rindex(leaf):] if leaf in path else path
        out[f"{key}::{rest}"] = outcome
    return out


def exported_interface(wheel: Path, package: str) -> dict[str, set[str]]:
    """``nm -D --defined-only`` of each extension module, reduced to the interface docs/abi.md
    defines for extension modules: ``PyInit_*`` and ``<package>_*``."""
    out: dict[str, set[str]] = {}
    scratch = wheel.parent / f".nm-{wheel.stem}"
    shutil.rmtree(scratch, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.endswith(".so")]
        archive.extractall(scratch, members)
    for member in members:
        nm = subprocess.run(["nm", "-D", "--defined-only", str(scratch / member)], capture_output=True, text=True,
                            check=True).stdout
        names = {line.split()[-1].split("@")[0] for line in nm.splitlines() if len(line.split()) >= 3}
        out[member] = {n for n in names if n.startswith("PyInit_") or n.startswith(f"{package}_")}
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def nm_diff(old: Path, new: Path, package: str) -> tuple[set[str], set[str]]:
    before, after = exported_interface(old, package), exported_interface(new, package)
    removed = {s for member, syms in before.items() for s in syms - after.get(member, set())}
    added = {s for member, syms in after.items() for s in syms - before.get(member, set())}
    return removed, added


def abi_symbol_findings(abi: dict) -> tuple[set[str], set[str]]:
    def names(kind: str) -> set[str]:
        return {f["symbol"].split("@")[0] for f in abi["findings"] if f["kind"] == kind and f.get("symbol")}

    return names("symbol_removed"), names("symbol_added")


def requires_dist(wheel: Path) -> dict[str, str]:
    """The wheel's ``Requires-Dist`` outside extras: name -> the rest of the entry."""
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [m for m in archive.namelist() if m.endswith(".dist-info/METADATA")]
        lines = archive.read(member).decode().splitlines()
    out = {}
    for line in lines:
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            entry = line.split(":", 1)[1].strip()
            name = re.match(r"[A-Za-z0-9._-]+", entry).group(0)
            out[re.sub(r"[-_.]+", "-", name).lower()] = entry[len(name):].replace(" ", "")
    return out


def expected_bump(old: str, new: str) -> str:
    """docs/abi.md's rule for two X.Y.Z versions: the leftmost non-zero component of the old
    version is the major one (0.3.1 -> 0.4.0 major, 0.3.1 -> 0.3.2 minor)."""
    a, b = (tuple(int(x) for x in v.split(".")) for v in (old, new))
    major = next((i for i, x in enumerate(a) if x), 2)
    changed = next(i for i in range(3) if a[i] != b[i])
    return ("major", "minor", "patch")[max(0, changed - major)]


def extension_modules(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {m.split(".", 1)[0].replace("/", ".") for m in archive.namelist() if m.endswith(".so")}


def one_wheel(folder: Path) -> Path:
    (wheel,) = sorted(folder.glob("*.whl"))
    return wheel


def plant(project: RealProject, tree: Path) -> None:
    """A failing test next to the project's tests and one more exported C function."""
    tests = tree / project.tests
    (tests / f"{PLANTED_TEST}.py").write_text(f"def {PLANTED_TEST}():\n    assert 1 + 1 == 3, 'planted'\n")
    source = next(p for p in tree.rglob("_speedups.c") if "build" not in p.parts)
    source.write_text(source.read_text() + textwrap.dedent(f"""

        __attribute__((visibility("default"))) int {project.import_name}_xcompat_planted(void) {{ return 42; }}
    """))


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Path:
    if shutil.which("ssh-keygen") is None:
        pytest.fail("ssh-keygen is required by this tier (apt-get install openssh-client)")
    return tmp_path_factory.mktemp("keys")


@pytest.mark.parametrize("name", ["markupsafe", "simplejson", "torchsort"])
def test_adopted_project_runs_green_and_agrees_with_pytest_and_nm(name, tmp_path, keys):
    project = PROJECTS[name]
    env = build_env(project)
    tree, previous = adopt(project, tmp_path, keys)
    out = tmp_path / "out"
    run = xcompat("run", str(tree), "--baseline", str(previous), "--out", str(out), cwd=tmp_path, env=env)
    report = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    assert (out / "run.json").exists(), run.stdout[-3000:] + run.stderr[-3000:]
    stages = {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}
    assert stages["test"]["status"] == "passed", (stages["test"], run.stderr[-3000:])

    # the test stage, test by test, against plain pytest on the same wheel
    ours = json.loads((out / "test.json").read_text())
    assert ours["cell_id"] == CELL
    new_wheel = one_wheel(out / "wheels")
    plain = plain_pytest_outcomes(project, tree, new_wheel, tmp_path / "plain")
    mine = by_test({t["nodeid"]: t["outcome"] for t in ours["tests"]}, project.tests)
    theirs = by_test(plain, project.tests)
    assert len(theirs) >= project.min_tests and "passed" in theirs.values() and mine == theirs

    # coverage of the package's Python and C code (src/ layout or tests inside the package),
    # never of its tests
    assert stages["coverage"]["status"] == "passed", (stages["coverage"], run.stderr[-3000:])
    files = json.loads((out / "coverage" / "coverage.json").read_text())["files"]
    covered = {f["path"]: f["lines_covered"] for f in files}
    package = str(Path(project.extension.replace(".", "/")).parent)
    package = f"src/{package}" if (tree / "src" / package).is_dir() else package
    for path in (f"{package}/__init__.py", f"{package}/{project.native_source}"):
        assert covered.get(path, 0) > 0, (path, covered)
    assert not [p for p in covered if p.startswith(f"{project.tests}/")], sorted(covered)

    # the ABI verdict: the two releases' wheels compared, against nm -D, their metadata and
    # docs/abi.md's semver rule
    abi = json.loads((out / "abi.json").read_text())
    old_wheel = one_wheel(out / "baseline")
    assert (abi["old"]["version"], abi["new"]["version"]) == (project.previous, project.version), abi["summary"]
    assert {p["new"].rsplit("/", 1)[-1].split(".")[0] for p in abi["pairs"]} == \
        {m.rsplit(".", 1)[-1] for m in extension_modules(new_wheel)}, abi["pairs"]
    removed, added = nm_diff(old_wheel, new_wheel, project.import_name)
    assert abi_symbol_findings(abi) == (removed, added)
    if removed:
        assert abi["required_bump"] == "major"
    old_deps, new_deps = requires_dist(old_wheel), requires_dist(new_wheel)
    assert {f["symbol"] for f in abi["findings"] if f["kind"].startswith("requires_dist")} == \
        {n for n in old_deps.keys() | new_deps.keys() if old_deps.get(n) != new_deps.get(n)}, abi["findings"]
    assert abi["actual_bump"] == expected_bump(project.previous, project.version)

    if project.torch:
        # the CPU cell, with nvcc on PATH: both releases built without isolation against the
        # installed torch into the CPU variant, and the coverage stage's build likewise
        nvcc_folder = env["PATH"].split(os.pathsep)[0]
        for log, wheel in ((out / "logs" / "build.log", new_wheel), (out / "logs" / "baseline.log", old_wheel)):
            built = [line for line in log.read_text().splitlines() if line.startswith(f"built {wheel.name} (")]
            assert built and "not isolated: builds against the runner's torch==" in built[0], (log.name, built)
            assert "CPU build: nvcc hidden from PATH (" in built[0] and nvcc_folder in built[0], built[0]
            assert extension_modules(wheel) == {project.extension}, wheel.name
        assert "CPU build: nvcc hidden from PATH" in (out / "logs" / "coverage-build.log").read_text()

    # one verdict: the exit code, run.json and the report agree
    green = report.startswith("## ✅")
    assert run.returncode == (0 if green else 1), (run.returncode, report[:400])
    assert green == (abi["status"] == "passed"), report[:800]


@pytest.mark.parametrize("name", ["markupsafe", "simplejson"])
def test_a_planted_failure_turns_the_report_red_and_is_named(name, tmp_path, keys):
    project = PROJECTS[name]
    tree, previous = adopt(project, tmp_path, keys)
    plant(project, tree)
    out = tmp_path / "out"
    run = xcompat("run", str(tree), "--baseline", str(previous), "--out", str(out), cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert report.startswith("## ❌"), report[:400]
    assert PLANTED_TEST in report
    ours = json.loads((out / "test.json").read_text())
    failed = [t["nodeid"] for t in ours["tests"] if t["outcome"] == "failed"]
    # (markupsafe's autouse fixture runs every test twice: native and C speedups)
    assert failed and all(f"{PLANTED_TEST}.py::{PLANTED_TEST}" in nodeid for nodeid in failed), failed
    # the planted export is the one interface change, for nm and for the ABI verdict alike
    abi = json.loads((out / "abi.json").read_text())
    removed, added = nm_diff(one_wheel(out / "baseline"), one_wheel(out / "wheels"), project.import_name)
    assert added >= {f"{project.import_name}_xcompat_planted"}
    assert abi_symbol_findings(abi) == (removed, added)
    assert re.search(r"symbol_added", json.dumps(abi["findings"]))


def test_a_project_without_a_matrix_is_told_to_write_one(tmp_path):
    project = PROJECTS["markupsafe"]
    tree = source_tree(project, project.version, tmp_path)
    out = tmp_path / "out"
    run = xcompat("run", str(tree), "--out", str(out), cwd=tmp_path, timeout=300)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "xcompat matrix init" in run.stderr and "Traceback" not in run.stderr and len(lines) <= 2, run.stderr
    assert not out.exists()  # nothing half-written, and not the bundled sample's matrix instead
