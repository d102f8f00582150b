"""Resolve ``xcompat run``'s configuration once and drive the stages in order.

The matrix is read once, its settings resolved once (``xcompat.settings``: defaults <
signed matrix < command line, the latter refused in CI) and handed to every stage; no
stage re-reads the matrix. Each stage that did not write its own result (it failed,
errored or was skipped) gets an envelope under ``stages/``, so the report, computed by
``xcompat.results.judge``, sees it; the exit code is that verdict's.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xcompat import interrupts, jsonio
from xcompat.cpus import usable_cpus
from xcompat.errors import InputError, UsageError, VerificationError, XcompatError
from xcompat.log import get_logger
from xcompat.model import runner_arch, runner_platform
from xcompat.pipeline.local import (
    LocalPipeline,
    RunConfig,
    RunningCommand,
    StageResult,
    load_json,
    python_tag,
)
from xcompat.resources import data_dir
from xcompat.results.stages import STAGES, result_file
from xcompat.settings import is_ci

RUN_VERSION = 1


def _bundled_sample() -> tuple[Path, Path]:
    examples = data_dir("examples")
    return examples / "sample-ext-v2", examples / "sample-ext"


def _is_project(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() or (path / "setup.py").is_file()


def resolve_config(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> RunConfig:
    """Read the matrix once and resolve the settings once; refuse what cannot run."""
    from xcompat.matrix import load_matrix, read_matrix_bytes
    from xcompat.settings import is_ci, resolve_settings
    from xcompat.settings.project import project_facts

    env = os.environ if env is None else env
    log = get_logger()
    head, release = _bundled_sample()
    demo = args.project is None
    if demo:
        here = " (this folder is a project: `xcompat run .` runs it)" if _is_project(Path.cwd()) else ""
        log.info(f"no PROJECT given: running the bundled sample project{here}")
    project = (head if demo else args.project).resolve()
    if not _is_project(project):
        raise UsageError(f"{project} is not a Python project (no pyproject.toml or setup.py)",
                         hint="pass the folder that holds your pyproject.toml")
    matrix = args.matrix
    if matrix is None:
        # The demo (no PROJECT given) uses the bundled sample's signed matrix; a project
        # always uses its own, never the sample's.
        matrix = release / ".xcompat" / "matrix.yml" if demo else project / ".xcompat" / "matrix.yml"
        if not matrix.is_file():
            raise UsageError(f"{project} has no .xcompat/matrix.yml",
                             hint=f"write a starter matrix with: xcompat matrix init {args.project}")
    matrix = matrix.resolve()
    raw = read_matrix_bytes(matrix)
    loaded = load_matrix(raw, source=str(matrix))
    signature = matrix.with_name(matrix.name + ".sig")
    signed = signature.is_file()
    if not signed:
        if is_ci(env):
            raise VerificationError(
                "the matrix is not signed; CI runs only a signed matrix", file=matrix,
                hint=f"sign it: xcompat matrix sign {matrix} --key ~/.ssh/id_ecdsa",
            )
        log.warning(f"{matrix} is not signed: running it locally; the report says 'unsigned' and CI will refuse it")
    signers = args.allowed_signers or matrix.parent / "allowed_signers"
    signers = signers.resolve()
    if signed and not signers.is_file():
        raise InputError("allowed_signers not found", file=signers, hint="pass --allowed-signers PATH")
    overrides = {
        "tests.timeout": args.timeout,
        "tests.isolation": args.isolate,
        "tests.pytest-args": list(args.pytest_args) if getattr(args, "pytest_args", None) else None,
    }
    settings = resolve_settings(loaded, overrides, env=env, signed=signed)
    trust_ref = getattr(args, "trust_ref", None)
    if signed and is_ci(env) and trust_ref is None:
        log.warning("CI run without --trust-ref: the trust list is read from this checkout, which a pull "
                    "request can change; pass --trust-ref with the base branch")
    baseline = args.baseline
    if baseline is None and demo:
        baseline = release
    from xcompat.pipeline.preflight import check_run_inputs

    # Before the first build: an input that cannot work ends the run here, in one line.
    check_run_inputs(project=project, matrix=loaded, matrix_path=matrix, settings=settings,
                     baseline=baseline.resolve() if baseline is not None else None, env=env)
    return RunConfig(
        project=project,
        matrix=matrix,
        allowed_signers=signers if signers.is_file() else None,
        baseline=baseline.resolve() if baseline is not None else None,
        out=args.out,
        backend=args.backend,
        coverage=not args.no_coverage,
        settings=settings,
        facts=project_facts(project),
        signed=signed,
        trust_ref=trust_ref,
    )


class Stages:
    """The stages of a local run. Each returns a StageResult; none raises for a stage failure."""

    def __init__(self, pipe: LocalPipeline, *, isolation: str = "auto") -> None:
        from xcompat.settings import defaults_settings

        self.pipe = pipe
        self.isolation = isolation  # build isolation of the project's and the baseline's builds
        self.cfg = pipe.config
        self.settings = self.cfg.settings or defaults_settings()
        self.cell_id: str | None = None
        self.cells: list[dict[str, Any]] = []
        self.wheels: list[Path] = []
        self.site: Path | None = None
        self.rerun: str | None = None  # the report's command that reruns one test ("{test}")
        self.halted: str | None = None  # why the remaining stages do not run
        self.baseline_path: Path | None = None  # what the ABI is diffed against (xcompat.pipeline.baseline_stage)
        self.baseline_missing: str | None = None  # why there is none
        self.baseline_started: Any = None  # the baseline, prepared or building (xcompat.pipeline.baseline_stage)

    def guarded(self, name: str, stage: Callable[[], StageResult]) -> Callable[[], StageResult]:
        """The stage, or "skipped" when an earlier stage halted the run (the report always runs)."""

        def run() -> StageResult:
            ignore_output(self.pipe.stage_dir)
            if self.halted is not None and name != "report":
                return StageResult(name=name, status="skipped", detail=f"not run: {self.halted}")
            return stage()

        return run

    # 1. signature
    def verify(self) -> StageResult:
        p = self.pipe
        if not self.cfg.signed or self.cfg.allowed_signers is None:
            return StageResult(name="verify", status="skipped",
                               detail="unsigned matrix: not verified (a local run only; CI refuses it)")
        argv: list[str | os.PathLike[str]] = [
            "matrix", "verify", self.cfg.matrix, "--allowed-signers", self.cfg.allowed_signers,
            "--json", p.path("verify.json")]
        if self.cfg.trust_ref:
            argv += ["--trust-ref", self.cfg.trust_ref]
        result = p.run_command("verify", p.xcompat(*argv), outputs=[p.path("verify.json")])
        if result.status == "passed":
            verified = (load_json(p.path("verify.json")) or {}).get("sha256")
            if verified != self.settings.matrix_sha256:
                result.status = "error"
                result.detail = (f"the matrix changed while the run read it (verified sha256 {verified}, "
                                 f"settings from {self.settings.matrix_sha256})")
        if result.status != "passed" and is_ci(p.env):
            # In CI nothing runs with settings from a matrix that did not verify.
            self.halted = "the matrix signature did not verify"
        return result

    # 2. plan: the cells this machine can serve
    def plan(self) -> StageResult:
        from xcompat.devices import available_backends

        p = self.pipe
        system, arch = runner_platform(), runner_arch()
        backends = available_backends()
        full = p.path("plan.full.json")
        argv: list[str | os.PathLike[str]] = [
            "matrix", "plan", self.cfg.matrix, "--format", "json", "--platform", system, "--arch", arch,
            "--python", python_tag(), "-o", full]
        if self.settings.matrix_sha256:
            argv += ["--expect-sha256", self.settings.matrix_sha256]
        for b in backends:
            argv += ["--backend", b]
        result = p.run_command("plan", p.xcompat(*argv), outputs=[full])
        if result.status != "passed":
            self.halted = "the plan stage failed"  # no cell to build or test for
            return result
        from xcompat.results.collect import load_plan

        doc = load_plan(full)  # the one plan reader, as the report and the gate read it
        cells = doc["cells"]
        local, notes = _pick_framework_versions(cells, _installed_frameworks())
        doc["cells"] = local
        doc["not_run_here"] = self._not_run_here({c["id"] for c in local}, system, arch, backends)
        jsonio.write_json(p.path("plan.json"), doc)
        full.unlink()
        self.cells = local
        if not local:
            result.status = "failed"
            result.detail = (f"the matrix has no cell for Python {python_tag()} on {system}/{arch} "
                             f"with backends {', '.join(backends)}")
            self.halted = "the plan stage failed"
            return result
        # the first required cell drives the run; others on this machine share its results
        self.cell_id = next((c["id"] for c in local if c.get("required")), local[0]["id"])
        result.outputs = ["plan.json"]
        result.detail = f"{len(local)} cell(s) here: {', '.join(c['id'] for c in local[:3])}"
        if notes:
            result.detail += " (" + "; ".join(notes) + ")"
        return result

    def _not_run_here(self, here: set[str], system: str, arch: str, backends: list[str]) -> list[dict[str, Any]]:
        """The matrix's other cells, each with the reason this machine cannot run it: the report
        lists them, so "all required cells passed" is never read as the whole matrix."""
        from xcompat.matrix import load_matrix, read_matrix_bytes
        from xcompat.matrix.plan import expand

        try:
            cells = expand(load_matrix(read_matrix_bytes(self.cfg.matrix), source=str(self.cfg.matrix)))
        except XcompatError as exc:  # the plan command read the same file: say so rather than guess
            self.pipe.log.warning(f"could not list the matrix's other cells: {exc.message}")
            return []
        installed = _installed_frameworks()
        out = []
        for c in cells:
            if c.id in here:
                continue
            if c.python != python_tag():
                why = f"Python {c.python} (this is {python_tag()})"
            elif c.platform != system or c.arch != arch:
                why = f"{c.platform}/{c.arch} (this is {system}/{arch})"
            elif c.backend not in backends:
                why = f"the {c.backend} backend (this machine has {', '.join(backends)})"
            else:
                other = [f"{name} {v} ({installed[name]} is installed)" for name, v in c.frameworks
                         if name in installed and not _matches(v, installed[name])]
                why = ", ".join(other) or "the run's cell stands for it"
            out.append({"id": c.id, "required": c.required, "why": why})
        return out

    # 3. wheels
    def build_argv(self, project: Path, out: Path) -> list[str]:
        """``xcompat build`` for the project and the baseline alike: the same isolation, and the
        run's cell's device backend (a CPU cell builds the CPU variant)."""
        argv = [*self.pipe.xcompat("build", project, "--backend", "native", "--out", out,
                                   "--isolation", self.isolation)]
        backend = next((c.get("backend") for c in self.cells if c["id"] == self.cell_id), None)
        if backend:
            argv += ["--device", backend]
        return argv

    def run_build(self, name: str, project: Path, out: Path) -> StageResult:
        return self.finish_build(self.start_build(name, project, out), out)

    def start_build(self, name: str, project: Path, out: Path) -> RunningCommand:
        return self.pipe.start_command(name, self.build_argv(project, out), outputs=[out / "build.json"])

    def finish_build(self, running: RunningCommand, out: Path) -> StageResult:
        result = self.pipe.finish_command(running)
        if result.status != "passed":
            reason = build_failure(out / "build.json")
            if reason:
                # The cause the build record names (the compiler's or the build script's error),
                # not the last line of the log, which is the build frontend's wrapper message.
                result.detail = f"exit {result.exit_code}: {reason}"
        return result

    def build(self) -> StageResult:
        from xcompat.pipeline.baseline_stage import start_baseline

        p = self.pipe
        if usable_cpus() > 1:
            # The baseline's build is independent of the project's: on a second core it runs
            # alongside, and the baseline stage only waits for what is left of it.
            start_baseline(self)
        out = p.path("wheels")
        result = self.run_build("build", self.cfg.project, out)
        self.wheels = sorted(out.glob("*.whl"))
        if result.status == "passed" and not self.wheels:
            result.status, result.detail = "error", "the build produced no wheel"
        return result

    def baseline(self) -> StageResult:
        from xcompat.pipeline.baseline_stage import run_baseline

        return run_baseline(self)

    # 4. device probe
    def probe(self) -> StageResult:
        p = self.pipe
        argv: list[str | os.PathLike[str]] = ["probe", "-o", p.path("probe.json")]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
        if self.wheels:
            argv += ["--wheel", self.wheels[0]]
        return p.run_command("probe", p.xcompat(*argv), outputs=[p.path("probe.json")])

    # 5. conformance kernels, through the fallback chain: only when the settings require them
    def kernels(self) -> StageResult:
        from xcompat.results.required import kernels_requirement

        requirement = kernels_requirement(self.settings, self.cfg.facts)
        if not requirement.required:
            return StageResult(name="kernels", status="skipped", detail=f"not required: {requirement.reason}")
        p = self.pipe
        argv: list[str | os.PathLike[str]] = ["kernels", "run", "--backend", self.cfg.backend,
                                              "--json", p.path("kernels.json")]
        if self.settings.tests.kernels != "all":
            for name in self.settings.tests.kernels:
                argv += ["--kernel", name]
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
        import shutil
        import zipfile

        from xcompat.errors import XcompatError
        from xcompat.pipeline.install import unpack_wheels

        site = self.pipe.path(".site")
        # As pip lays them out, without pip's start-up; pip for a wheel with scripts or data
        # files, and for one that cannot be unpacked (pip's error is then the install's).
        try:
            written = unpack_wheels(self.wheels, site)
        except (XcompatError, zipfile.BadZipFile, OSError):
            shutil.rmtree(site, ignore_errors=True)
            written = None
        if written is not None:
            log = self.pipe.path("logs", "install.log")
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(f"xcompat: unpacked {', '.join(w.name for w in self.wheels)} into .site "
                           f"({len(written)} files), as pip install --target lays them out\n", encoding="utf-8")
            self.site = site
            return site
        res = self.pipe.run_command("install", [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site),
            *(str(w) for w in self.wheels)])
        if res.status != "passed":
            return None
        self.site = site
        return site

    def _env_with_site(self, site: Path) -> dict[str, str]:
        existing = os.environ.get("PYTHONPATH")
        addopts = os.environ.get("PYTEST_ADDOPTS")
        # The tests are imported from the project's folder, which the run never writes: no
        # bytecode (__pycache__) and no pytest cache (.pytest_cache) next to them.
        return {"PYTHONPATH": str(site) + (os.pathsep + existing if existing else ""),
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTEST_ADDOPTS": (addopts + " " if addopts else "") + "-p no:cacheprovider"}

    def test_targets(self) -> tuple[list[str], list[str]] | StageResult:
        """(targets, pytest args) from ``tests.pytest`` / ``tests.pytest-args``, or why not."""
        t = self.settings.tests
        if not t.pytest_paths:
            return StageResult(name="test", status="skipped", detail="not required: tests.pytest is empty")
        args = list(t.pytest_args)
        if "--pyargs" in args:
            # module names, imported from the installed wheel
            return list(t.pytest_paths), args
        targets = []
        for rel in t.pytest_paths:
            path = (self.cfg.project / rel).resolve()
            if not path.exists():
                return StageResult(
                    name="test", status="failed",
                    detail=f"tests.pytest names {rel}, and {path} does not exist (tests inside the package: "
                    "tests.pytest: [PKG.tests] with tests.pytest-args: [--pyargs]; see xcompat matrix init)")
            targets.append(str(path))
        return targets, args

    # 6. the project's own tests against the installed wheel, each isolated
    def test(self) -> StageResult:
        p = self.pipe
        found = self.test_targets()
        if isinstance(found, StageResult):
            return found
        targets, pytest_args = found
        site = self._install_site()
        if site is None:
            return StageResult(name="test", status="failed", detail="no wheel to test (the build failed)")
        t = self.settings.tests
        argv: list[str | os.PathLike[str]] = [
            "test", *targets, "--isolate", t.isolation, "--json", p.path("test.json"),
            "--junit", p.path("junit.xml"), "--timeout", str(t.timeout)]
        if self.cell_id:
            argv += ["--cell-id", self.cell_id]
        # From the project's folder, as its developers run pytest: paths in tracebacks are the
        # project's own (tests/test_x.py:12), and the report's rerun command works there as
        # printed. The folder is not on sys.path, so the installed wheel is what the tests
        # import. In-package tests (--pyargs) are the installed copies: they run from the
        # install folder, named from there (simplejson/tests/test_x.py), not from the staging
        # folder whose name is gone once the run is in place.
        pyargs = "--pyargs" in pytest_args
        cwd = site if pyargs else self.cfg.project
        if pyargs:
            pytest_args = ["--rootdir", str(site), *pytest_args]
        if pytest_args:
            argv += ["--", *pytest_args]
        self.rerun = rerun_template(self.pipe.final, self.cfg.project, pyargs=pyargs,
                                    pytest_args=[a for a in t.pytest_args if a != "--pyargs"])
        return p.run_command("test", p.xcompat(*argv, safe_path=True), env=self._env_with_site(site),
                             cwd=cwd, outputs=[p.path("test.json"), p.path("junit.xml")])

    # 7. ABI diff against the last release, with the matrix's abi policy
    def abi(self) -> StageResult:
        from xcompat.pipeline.baseline_stage import run_abi

        return run_abi(self)

    # 8. merged coverage (Python from the tests; native when a coverage build is available)
    def coverage(self) -> StageResult:
        from xcompat.pipeline.coverage_stage import run_coverage

        if not self.cfg.coverage:
            return StageResult(name="coverage", status="skipped", detail="--no-coverage")
        return run_coverage(self)

    # 9. report
    def report(self) -> StageResult:
        from xcompat.pipeline.report_stage import write_reports

        self.write_stage_envelopes()
        return write_reports(self)

    def write_stage_envelopes(self) -> None:
        """An envelope for every stage that ran or was skipped without writing its own result.

        So the verdict sees a failed build, a test stage that found no tests, or a kernels
        stage the settings do not require (skipped, with the reason), exactly as it sees
        results the stages wrote themselves.
        """
        build = load_json(self.pipe.path(STAGES["build"].result_file)) if self.cell_id else None
        if isinstance(build, dict) and build.get("cell_id") is None and build.get("status") in ("passed", "failed"):
            # `xcompat build` on this machine builds for no named cell: its wheel is the run's cell's.
            jsonio.write_json(self.pipe.path("stages", "build-cell.json"), {
                "version": 1, "kind": "build", "cell_id": self.cell_id, "status": build["status"],
                "summary": f"the wheel built on this machine ({STAGES['build'].result_file}): {build.get('summary', '')}",
            })
        for result in self.pipe.results:
            own = result_file(result.name)
            if own is not None and self.pipe.path(own).is_file():
                continue
            if result.name == "baseline":
                from xcompat.pipeline.baseline_stage import baseline_envelope

                jsonio.write_json(self.pipe.path("stages", "baseline.json"), baseline_envelope(result))
                continue
            if result.status == "passed" and own is None:
                continue
            kind = result.name if own is not None else "pipeline"
            status = {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(result.status, "failed")
            summary = result.detail or f"{result.name} {result.status}"
            if own is not None and result.status == "passed":
                # its command exited 0 but its result is not there: nothing says it passed
                status = "failed"
                summary = (f"its command exited 0 but wrote no {own}: the result is missing "
                           "(something ended the process before it was written)")
            if kind == "pipeline":
                summary = f"{result.name}: {summary}"
            cell = self.cell_id if kind in STAGES and STAGES[kind].per_cell else None
            if kind == "abi" and result.status == "skipped":
                cell = None
            document = {"version": 1, "kind": kind, "cell_id": cell, "status": status, "summary": summary,
                        "stage": result.name, "log": result.log}
            jsonio.write_json(self.pipe.path("stages", f"{result.name}.json"), document)


def rerun_template(out: Path, project: Path, *, pyargs: bool, pytest_args: Sequence[str]) -> str:
    """The shell command, run in the project's folder, that reruns one test ("{test}") against the
    wheel the run installed (kept under the output folder), alone in its own process."""
    site = out / ".site"
    try:
        shown = str(site.relative_to(project))
    except ValueError:
        shown = str(site)
    extra = (" -- " + " ".join(shlex.quote(a) for a in pytest_args)) if pytest_args else ""
    if pyargs:
        return f"cd {shlex.quote(shown)} && PYTHONPATH=. xcompat test --isolate test {{test}}{extra}"
    return f"PYTHONPATH={shlex.quote(shown)} xcompat test --isolate test {{test}}{extra}"


def ignore_output(folder: Path) -> None:
    """A ``.gitignore`` of ``*`` in the output folder (as pytest and mypy give their caches), so
    that a run's output in a checkout is never committed or shown as a change."""
    from xcompat.outputs import write_bytes

    marker = folder / ".gitignore"
    if folder.is_dir() and not marker.exists():
        write_bytes(marker, b"# written by xcompat run: its output folder is not part of the project\n*\n")


def build_failure(record: Path) -> str | None:
    """The reason a failed ``xcompat build`` gives in its record (the first failed cell's), if any."""
    from xcompat.neutralise import MESSAGE_CHARS, one_line

    try:
        document = load_json(record)
    except InputError:
        return None
    if not isinstance(document, dict):
        return None
    for row in document.get("cells") or []:
        if isinstance(row, dict) and row.get("status") == "failed" and row.get("reason"):
            return one_line(row["reason"], MESSAGE_CHARS)
    return None


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


def run_pipeline(config: RunConfig, *, isolation: str = "auto") -> int:
    """Run every stage; ``isolation`` is the build isolation of the project's and the baseline's
    builds (``xcompat build --isolation``)."""
    log = get_logger()
    pipe = LocalPipeline(config, log)
    stages = Stages(pipe, isolation=isolation)
    log.info(f"xcompat run: {config.project}")
    log.info(f"  matrix {config.matrix}" + ("" if config.signed else " (unsigned)"))
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
    sequence = [(name, stages.guarded(name, fn)) for name, fn in sequence]
    results = pipe.execute(sequence, current_cell=lambda: stages.cell_id)
    published = False
    try:
        elapsed = time.monotonic() - start
        summary = {
            "version": RUN_VERSION,
            "project": str(config.project),
            "matrix": str(config.matrix),
            "cell_id": stages.cell_id,
            "elapsed_s": round(elapsed, 2),
            "stages": [r.to_dict() for r in results],
        }
        with interrupts.deferred():  # a signal now waits until the run is in place, whole
            jsonio.write_json(pipe.path("run.json"), summary, schema="run")
            out = pipe.publish()
            published = True
    except KeyboardInterrupt:
        if published:  # the signal waited for the move into place: the run is complete
            raise interrupts.error(f"the run had completed: {pipe.final}", where="after the last stage") from None
        pipe.abandon()
        raise interrupts.error(f"{pipe.final} was left as it was", where="after the last stage") from None
    _print_summary(log, out, results, stages, elapsed)
    return exit_code(results, getattr(stages, "report_object", None), log)


def exit_code(results: list[StageResult], report: Any, log: Any = None) -> int:
    """0 only when the report (the one verdict) is green and it was written; 3 when the matrix
    signature did not verify (as ``xcompat matrix verify``); 1 otherwise."""
    verify = next((r for r in results if r.name == "verify"), None)
    if verify is not None and verify.exit_code == VerificationError.exit_code:
        if log is not None:
            log.error(f"the matrix signature did not verify: {verify.detail.removeprefix('exit 3: ')}")
        return VerificationError.exit_code
    report_stage = next((r for r in results if r.name == "report"), None)
    if report is None or report_stage is None or report_stage.status != "passed":
        if log is not None:
            log.error("the report could not be written: the run is not green")
        return 1
    if report.conclusion != "success":
        if log is not None:
            log.error(f"report is red: {report.headline}")
            for problem in report.problems[:10]:
                log.error(f"  {problem}")
        return 1
    return 0


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
