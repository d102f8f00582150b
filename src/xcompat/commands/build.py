"""``xcompat build``: build, repair and audit wheels for this runner's cells.

Exit codes: 0 built, 2 bad input (project, matrix, options), 4 a build tool failed
(the failing cell and the last lines of its log are shown; build.json is still written),
5 a required tool or container engine is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.outputs import OutputDir

if TYPE_CHECKING:
    from xcompat.model import Cell

BACKENDS = ("native", "cibuildwheel")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Build wheels for the cells of the plan this runner serves, repair them (auditwheel on Linux, "
        "delocate on macOS) without grafting torch or GPU runtime libraries, audit them (platform policy "
        "and the symbols that set it, abi3audit, CUDA archs) and write OUT/build.json."
    )
    parser.add_argument("project", nargs="?", type=Path, default=Path("."),
                        help="folder holding pyproject.toml or setup.py (default: current folder)")
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="cibuildwheel: containerised manylinux builds (default under CI); "
                        "native: this interpreter and toolchain (default elsewhere; self-hosted GPU runners)")
    parser.add_argument("--out", type=OutputDir(), default=Path("wheelhouse"), metavar="DIR",
                        help="where wheels, build.json and logs/ go (default: wheelhouse)")
    cells = parser.add_argument_group("cells")
    cells.add_argument("--matrix", type=Path, metavar="FILE",
                       help="matrix file; its cells for this platform and arch are built "
                       "(without it: one native build for this interpreter)")
    cells.add_argument("--device", action="append", default=[], metavar="BACKEND",
                       help="only cells of this device backend (cpu, cuda, rocm, mps; repeatable); without "
                       "--matrix, the device backend of the one build (cpu: the CUDA toolchain is hidden; "
                       "default: that of the torch the project builds against)")
    cells.add_argument("--cell", action="append", default=[], metavar="ID",
                       help="only this cell id (repeatable)")
    native = parser.add_argument_group("native backend")
    native.add_argument("--isolation", choices=("auto", "on", "off"), default="auto",
                        help="build isolation; auto: off when the project builds against a framework the "
                        "runner provides (torch), else on (default: auto)")
    native.add_argument("--no-repair", action="store_true", help="skip auditwheel/delocate")
    native.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="another library pattern never grafted into the wheel (repeatable)")
    native.add_argument("--no-default-excludes", action="store_true",
                        help="graft torch and CUDA/ROCm runtime libraries too (not recommended)")
    native.add_argument("--no-ccache", action="store_true", help="do not use ccache even when installed")
    native.add_argument("-C", "--config-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to the build backend (repeatable)")
    cibw = parser.add_argument_group("cibuildwheel backend")
    cibw.add_argument("--test-command", default=None, metavar="CMD",
                      help="test command run in the build container ('' for none; "
                      "default: python -m pytest {package}/tests)")
    cibw.add_argument("--print-config", action="store_true",
                      help="print the derived cibuildwheel runs and the identifiers cibuildwheel confirms, "
                      "as JSON, without building")
    lane = parser.add_argument_group("emulated lane")
    lane.add_argument("--arch", default=None, metavar="ARCH",
                      help="build for another Linux architecture (aarch64, ppc64le, s390x): cross compiled on "
                      "this machine where the project allows, else built in an emulated Debian root (QEMU user "
                      "mode); build.json's emulation object says which (docs/architectures.md)")
    parser.add_argument("--json", action="store_true", help="print build.json to stdout")


def runner_cells(args: argparse.Namespace) -> list[Cell]:
    """The plan's cells this runner builds: same platform and arch, filtered by --device/--cell."""
    from xcompat.builder.cibw import current_platform
    from xcompat.errors import UsageError
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import cells_for_runner, expand
    from xcompat.model import runner_arch

    matrix = load_matrix(args.matrix)
    cells = expand(matrix)
    backend = args.backend
    if backend == "cibuildwheel":
        # cibuildwheel builds other archs under emulation: every arch of this platform.
        mine = cells_for_runner(cells, platform=current_platform(), backends=args.device or None)
    else:
        mine = cells_for_runner(cells, platform=current_platform(), arch=runner_arch(),
                                backends=args.device or None)
    if args.cell:
        known = {c.id for c in cells}
        unknown = [c for c in args.cell if c not in known]
        if unknown:
            raise UsageError(f"--cell {unknown[0]!r} is not a cell of the plan",
                             hint="list them with `xcompat matrix plan --format json`")
        mine = [c for c in mine if c.id in set(args.cell)]
    return mine


@contextlib.contextmanager
def summary_on_failure(out: Path) -> Iterator[None]:
    """When the build fails after writing build.json, still put it in the job summary."""
    import time

    from xcompat.errors import XcompatError
    from xcompat.log import get_logger

    started = time.time()
    try:
        yield
    except XcompatError:
        record = Path(out) / "build.json"
        if record.is_file() and record.stat().st_mtime >= started - 1:
            from xcompat import jsonio

            get_logger().write_summary(summary_markdown(jsonio.read_json(record)))
        raise


def summary_markdown(document: dict[str, Any]) -> str:
    """The job-summary table of a build (GitHub's ``$GITHUB_STEP_SUMMARY``)."""
    lines = [f"### xcompat build: {document['status']}", "", document["summary"], ""]
    if document["wheels"]:
        lines += ["| wheel | cell | size | policy | abi3 | CUDA code |", "|---|---|---:|---|---|---|"]
        for w in document["wheels"]:
            policy = (w["platform_policy"] or {}).get("symbol_tag") or "-"
            abi3 = w["abi3"]["status"] if w.get("abi3") else "-"
            gpu = ", ".join(sorted({a for archs in w["gpu_code"].values() for a in archs})) or "-"
            lines.append(f"| `{w['file']}` | {w['cell_id'] or '-'} | {w['size'] / 1024:.0f} KiB | {policy} "
                         f"| {abi3} | {gpu} |")
    for err in document["errors"]:
        lines += ["", f"**{err['cell_id'] or 'build'}**: {err['message']}", "", "```",
                  *err["log_tail"][-10:], "```"]
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    if getattr(args, "arch", None):  # an emulated lane's wheel: xcompat.emulation builds it
        return _lane_build(args)
    return _build(args)


def _build(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from xcompat import jsonio
    from xcompat.builder import BuildSettings, NativeOptions, build_project
    from xcompat.builder import defaults as D
    from xcompat.builder.native import check_project
    from xcompat.errors import InputError, UsageError
    from xcompat.log import get_logger
    from xcompat.model import BACKENDS

    log = get_logger()
    if args.backend is None:
        from xcompat.ci import is_ci

        args.backend = "cibuildwheel" if is_ci(os.environ) else "native"
    project = check_project(args.project)
    device = None
    if args.matrix is None and args.device:
        if len(set(args.device)) > 1 or args.device[0] not in BACKENDS:
            raise UsageError(f"--device without --matrix takes one device backend ({', '.join(BACKENDS)})",
                             hint="the backend of the one native build")
        device = args.device[0]
    cells = runner_cells(args) if args.matrix is not None else None
    if args.matrix is not None and not cells:
        raise InputError("no cell of the plan is built on this runner (platform, arch, --device, --cell)",
                         file=args.matrix)

    if args.backend == "cibuildwheel":
        from xcompat.builder.cibw import (
            build_with_cibuildwheel,
            check_identifiers,
            current_platform,
            derive_runs,
        )
        from xcompat.builder.native import build_requirements, runner_frameworks

        if not cells:
            raise InputError("--backend cibuildwheel needs --matrix (the cells decide what to build)")
        test_command = D.DEFAULT_TEST_COMMAND if args.test_command is None else (args.test_command or None)
        if args.print_config:
            requirements = build_requirements(project)
            frameworks = runner_frameworks(requirements, source=project / "pyproject.toml")
            runs = derive_runs([c for c in cells if c.platform == current_platform()],
                               build_frameworks=frameworks, build_requirements=requirements,
                               test_command=test_command, env=os.environ)
            out = []
            for run in runs:
                entry = run.to_dict()
                entry["unsupported"] = check_identifiers(project, run)
                out.append(entry)
            print(jsonio.dump_json({"version": 1, "runs": out}), end="")
            return 0
        with summary_on_failure(args.out):
            document = build_with_cibuildwheel(project, args.out, cells=cells, test_command=test_command)
    else:
        excludes = () if args.no_default_excludes else D.default_excludes()
        options = replace(
            NativeOptions(),
            isolation=args.isolation,
            repair=not args.no_repair,
            excludes=tuple(dict.fromkeys([*excludes, *args.exclude])),
            ccache=not args.no_ccache,
            config_settings=tuple(args.config_setting),
            device=device,
        )
        with summary_on_failure(args.out):
            document = build_project(project, args.out, cells=cells,
                                     settings=BuildSettings(backend="native", native=options))
    for wheel in document["wheels"]:
        policy = wheel["platform_policy"]
        where = f" [{policy['symbol_tag']}]" if policy else ""
        abi3 = f" abi3audit: {wheel['abi3']['status']}" if wheel.get("abi3") else ""
        log.success(f"{wheel['file']} ({wheel['size'] / 1024:.0f} KiB){where}{abi3}")
    log.info(f"{document['summary']}; record: {Path(args.out) / 'build.json'}")
    log.write_summary(summary_markdown(document))
    if args.json:
        print(jsonio.dump_json(document), end="")
    return 0


def _lane_build(args: argparse.Namespace) -> int:
    """``--arch``: the lane's wheel and build.json (with its emulation object)."""
    from xcompat import jsonio
    from xcompat.builder.native import check_project
    from xcompat.emulation.run_lane import build_record
    from xcompat.errors import ToolError
    from xcompat.log import get_logger

    log = get_logger()
    project = check_project(args.project)
    document = build_record(project, Path(args.out), args.arch, cell_id=(args.cell or [None])[0])
    jsonio.write_json(Path(args.out) / "build.json", document, schema="build")
    emulation = document["emulation"]
    log.info(f"{document['summary']} ({args.arch}: {emulation['build']} build, QEMU {emulation['qemu']}); "
             f"record: {Path(args.out) / 'build.json'}")
    if document["status"] != "passed":
        raise ToolError(document["errors"][0]["message"] if document["errors"] else document["summary"])
    if args.json:
        print(jsonio.dump_json(document), end="")
    return 0
