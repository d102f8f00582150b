"""Resolve ``xcompat run``'s configuration and drive the stages in order."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.errors import InputError, UsageError
from xcompat.log import get_logger
from xcompat.model import runner_arch, runner_platform
from xcompat.pipeline.local import (
    LocalPipeline,
    RunConfig,
    StageResult,
    load_json,
    python_tag,
)
from xcompat.resources import data_dir

RUN_VERSION = 1


def _bundled_sample() -> tuple[Path, Path]:
    examples = data_dir("examples")
    return examples / "sample-ext-v2", examples / "sample-ext"


def resolve_config(args: argparse.Namespace) -> RunConfig:
    head, release = _bundled_sample()
    project = (args.project or head).resolve()
    if not (project / "pyproject.toml").is_file() and not (project / "setup.py").is_file():
        raise UsageError(f"{project} is not a Python project (no pyproject.toml or setup.py)",
                         hint="pass the folder that holds your pyproject.toml")
    matrix = args.matrix
    if matrix is None:
        own = project / ".xcompat" / "matrix.yml"
        matrix = own if own.is_file() else release / ".xcompat" / "matrix.yml"
    matrix = matrix.resolve()
    if not matrix.is_file():
        raise InputError("matrix file not found", file=matrix,
                         hint="write .xcompat/matrix.yml (see docs/matrix.md) or pass --matrix")
    signers = (args.allowed_signers or matrix.parent / "allowed_signers").resolve()
    if not signers.is_file():
        raise InputError("allowed_signers not found", file=signers, hint="pass --allowed-signers PATH")
    baseline = args.baseline
    if baseline is None and args.project is None:
        baseline = release
    return RunConfig(
        project=project,
        matrix=matrix,
        allowed_signers=signers,
        baseline=baseline.resolve() if baseline is not None else None,
        out=args.out,
        backend=args.backend,
        isolate=args.isolate,
        timeout=args.timeout,
        coverage=not args.no_coverage,
    )


class Stages:
    """The stages of a local run. Each returns a StageResult; none raises for a stage failure."""

    def __init__(self, pipe: LocalPipeline) -> None:
        self.pipe = pipe
        self.cfg = pipe.config
        self.cell_id: str | None = None
        self.cells: list[dict[str, Any]] = []
        self.wheels: list[Path] = []
        self.site: Path | None = None

    # 1. signature
    def verify(self) -> StageResult:
        p = self.pipe
        return p.run_command("verify", p.xcompat(
            "matrix", "verify", self.cfg.matrix, "--allowed-signers", self.cfg.allowed_signers,
            "--json", p.path("verify.json")), outputs=[p.path("verify.json")])

    # 2. plan: the cells this machine can serve
    def plan(self) -> StageResult:
        from xcompat.devices import available_backends

        p = self.pipe
        system, arch = runner_platform(), runner_arch()
        backends = available_backends()
        full = p.path("plan.full.json")
        argv: list[str | os.PathLike[str]] = ["matrix", "plan", self.cfg.matrix, "--format", "json", "--platform", system, "--arch", arch,
                "--python", python_tag(), "-o", full]
        for b in backends:
            argv += ["--backend", b]
        result = p.run_command("plan", p.xcompat(*argv), outputs=[full])
        if result.status != "passed":
            return result
        doc = load_json(full) or {}
        cells = doc.get("cells", [])
        local, notes = _pick_framework_versions(cells, _installed_frameworks())
        doc["cells"] = local
        jsonio.write_json(p.path("plan.json"), doc)
        full.unlink()
        self.cells = local
        if not local:
            result.status = "failed"
            result.detail = (f"the matrix has no cell for Python {python_tag()} on {system}/{arch} "
                             f"with backends {', '.join(backends)}")
            return result
        # the first required cell drives the run; others on this machine share its results
        self.cell_id = next((c["id"] for c in local if c.get("required")), local[0]["id"])
        result.outputs = ["plan.json"]
        result.detail = f"{len(local)} cell(s) here: {', '.join(c['id'] for c in local[:3])}"
        if notes:
            result.detail += " (" + "; ".join(notes) + ")"
        return result

    # 3. wheels
    def build(self) -> StageResult:
        p = self.pipe
        out = p.path("wheels")
        result = p.run_command("build", p.xcompat(
            "build", self.cfg.project, "--backend", "native", "--out", out), outputs=[out / "build.json"])
        self.wheels = sorted(out.glob("*.whl"))
        if result.status == "passed" and not self.wheels:
            result.status, result.detail = "error", "the build produced no wheel"
        return result

    def baseline(self) -> StageResult:
        p = self.pipe
        base = self.cfg.baseline
        if base is None:
            return StageResult(name="baseline", status="skipped", detail="no baseline given (--baseline)")
        if base.is_dir() and ((base / "pyproject.toml").is_file() or (base / "setup.py").is_file()):
            out = p.path("baseline")
            return p.run_command("baseline", p.xcompat(
                "build", base, "--backend", "native", "--out", out), outputs=[out / "build.json"])
        if not base.exists():
            return StageResult(name="baseline", status="error", detail=f"{base} does not exist")
        return StageResult(name="baseline", status="passed", detail=f"using {base}")

    def _baseline_path(self) -> Path | None:
        base = self.cfg.baseline
        if base is None:
            return None
        if base.is_dir() and ((base / "pyproject.toml").is_file() or (base / "setup.py").is_file()):
            return self.pipe.path("baseline")
        return base

    # 4. device probe
    def probe(self) -> StageResult:
        p = self.pipe
        argv: list[str | os.PathLike[str]] = ["probe", "-o", p.path("probe.json")]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
        if self.wheels:
            argv += ["--wheel", self.wheels[0]]
        return p.run_command("probe", p.xcompat(*argv), outputs=[p.path("probe.json")])

    # 5. conformance kernels, through the fallback chain
    def kernels(self) -> StageResult:
        p = self.pipe
        argv: list[str | os.PathLike[str]] = ["kernels", "run", "--backend", self.cfg.backend, "--json", p.path("kernels.json")]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
            backend = next((c["backend"] for c in self.cells if c["id"] == self.cell_id), None)
            if backend and backend != "cpu":
                argv += ["--required-backend", backend]
        return p.run_command("kernels", p.xcompat(*argv), outputs=[p.path("kernels.json")])

    def _install_site(self) -> Path | None:
        if self.site is not None:
            return self.site
        if not self.wheels:
            return None
        site = self.pipe.path(".site")
        res = self.pipe.run_command("install", [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site),
            *(str(w) for w in self.wheels)])
        if res.status != "passed":
            return None
        self.site = site
        return site

    def _env_with_site(self, site: Path) -> dict[str, str]:
        existing = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": str(site) + (os.pathsep + existing if existing else "")}

    # 6. the project's own tests against the installed wheel, each isolated
    def test(self) -> StageResult:
        p = self.pipe
        site = self._install_site()
        if site is None:
            return StageResult(name="test", status="skipped", detail="no wheel to test (the build failed)")
        tests = self.cfg.project / "tests"
        if not tests.is_dir():
            return StageResult(name="test", status="skipped", detail=f"{tests} does not exist")
        argv: list[str | os.PathLike[str]] = ["test", tests, "--isolate", self.cfg.isolate, "--json", p.path("test.json"),
                "--junit", p.path("junit.xml"), "--timeout", str(self.cfg.timeout)]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
        return p.run_command("test", p.xcompat(*argv), env=self._env_with_site(site), cwd=p.stage_dir,
                             outputs=[p.path("test.json"), p.path("junit.xml")])

    # 7. ABI diff against the last release
    def abi(self) -> StageResult:
        p = self.pipe
        base = self._baseline_path()
        if base is None or not base.exists():
            return StageResult(name="abi", status="skipped", detail="no baseline to diff against")
        if not self.wheels:
            return StageResult(name="abi", status="skipped", detail="no wheel to diff (the build failed)")
        argv: list[str | os.PathLike[str]] = ["abi", "diff", base, p.path("wheels"), "--format", "markdown", "-o", p.path("abi.json"),
                "--against-version"]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
        return p.run_command("abi", p.xcompat(*argv), outputs=[p.path("abi.json")])

    # 8. merged coverage (Python from the tests; native when a coverage build is available)
    def coverage(self) -> StageResult:
        from xcompat.pipeline.coverage_stage import run_coverage

        if not self.cfg.coverage:
            return StageResult(name="coverage", status="skipped", detail="--no-coverage")
        return run_coverage(self)

    # 9. report
    def report(self) -> StageResult:
        from xcompat.pipeline.report_stage import write_reports

        return write_reports(self)


def _installed_frameworks() -> dict[str, str]:
    from importlib import metadata

    found: dict[str, str] = {}
    for name in ("torch", "numpy"):
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = version.split("+")[0]
    return found


def _matches(wanted: str, installed: str) -> bool:
    wanted_parts = wanted.split(".")
    return installed.split(".")[: len(wanted_parts)] == wanted_parts


def _pick_framework_versions(
    cells: list[dict[str, Any]], installed: dict[str, str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Keep the cells whose framework versions match what is installed here.

    For each framework the cells name: keep the cells whose listed version matches the
    installed one; when none does, keep the cells of the newest listed version and say so
    (a local run uses what is installed; CI runs the real versions). A framework that is
    not installed at all keeps no cell.
    """
    from packaging.version import InvalidVersion, Version

    def key(v: str) -> Any:
        try:
            return Version(v)
        except InvalidVersion:
            return Version("0")

    notes: list[str] = []
    names = sorted({name for cell in cells for name in (cell.get("frameworks") or {})})
    for name in names:
        listed = sorted({str(c["frameworks"][name]) for c in cells if name in (c.get("frameworks") or {})}, key=key)
        if name not in installed:
            notes.append(f"{name} is not installed here: its cells are left to CI")
            cells = [c for c in cells if name not in (c.get("frameworks") or {})]
            continue
        matching = [v for v in listed if _matches(v, installed[name])]
        chosen = matching[-1] if matching else listed[-1]
        if not matching:
            notes.append(f"{name} {installed[name]} is installed; the matrix lists {', '.join(listed)}: "
                         f"running the {chosen} cell with {installed[name]}")
        cells = [c for c in cells if str((c.get("frameworks") or {}).get(name, chosen)) == chosen]
    return cells, notes


def run_pipeline(config: RunConfig) -> int:
    log = get_logger()
    pipe = LocalPipeline(config, log)
    stages = Stages(pipe)
    log.info(f"xcompat run: {config.project}")
    log.info(f"  matrix {config.matrix}")
    if config.baseline:
        log.info(f"  ABI baseline {config.baseline}")
    start = time.monotonic()
    sequence = [
        ("verify", stages.verify),
        ("plan", stages.plan),
        ("build", stages.build),
        ("baseline", stages.baseline),
        ("probe", stages.probe),
        ("kernels", stages.kernels),
        ("test", stages.test),
        ("abi", stages.abi),
        ("coverage", stages.coverage),
        ("report", stages.report),
    ]
    results = pipe.execute(sequence, current_cell=lambda: stages.cell_id)
    elapsed = time.monotonic() - start
    summary = {
        "version": RUN_VERSION,
        "project": str(config.project),
        "matrix": str(config.matrix),
        "cell_id": stages.cell_id,
        "elapsed_s": round(elapsed, 2),
        "stages": [r.to_dict() for r in results],
    }
    jsonio.write_json(pipe.path("run.json"), summary, schema="run")
    out = pipe.publish()
    _print_summary(log, out, results, stages, elapsed)
    verdict = _verdict(out)
    failed = [r for r in results if r.status in ("failed", "error")]
    return 1 if failed or verdict == "failed" else 0


def _verdict(out: Path) -> str | None:
    try:
        return json.loads((out / "report.json").read_text()).get("conclusion")
    except (OSError, ValueError, AttributeError):
        return None


def _print_summary(log: Any, out: Path, results: list[StageResult], stages: Stages, elapsed: float) -> None:
    log.info("")
    log.info(f"xcompat run finished in {elapsed:.1f}s  (cell {stages.cell_id or '-'})")
    for r in results:
        mark = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "skip"}.get(r.status, r.status)
        log.info(f"  {r.name:<9} {mark:<6} {r.elapsed:6.1f}s  {r.detail}")
    log.info("")
    for name in ("report.md", "report.html", "report.json"):
        if (out / name).exists():
            log.info(f"  {out / name}")
    log.info(f"  stage logs: {out / 'logs'}")
