"""``xcompat run``: the whole pipeline on this machine, ending in report.md/json/html.

With no PROJECT: the demo, the bundled sample project (``examples/sample-ext-v2``, the
change under review) against its last release (``examples/sample-ext``), with that
release's signed matrix and demo ``allowed_signers``. A PROJECT always runs its own
``.xcompat/matrix.yml`` (``xcompat matrix init`` writes a starter one).

Settings (docs/run.md, "Settings"): the defaults table < the signed matrix < these options.
An option not given is unset and never wins over the matrix; in CI (``CI=true``) an
override of a matrix setting is refused.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.outputs import OutputDir

if TYPE_CHECKING:
    from xcompat.pipeline.local import RunConfig


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", type=Path, default=None,
                        help="project to check (default: the bundled sample project, the demo)")
    parser.add_argument("--matrix", type=Path, metavar="FILE",
                        help="matrix (default: PROJECT/.xcompat/matrix.yml; none there: run `xcompat matrix init`)")
    _stage_option(parser)
    parser.add_argument("--allowed-signers", type=Path, metavar="PATH",
                        help="trust list (default: next to the matrix: .xcompat/allowed_signers)")
    parser.add_argument("--trust-ref", metavar="REF",
                        help="protected git ref the trust list (and previous serial) come from, as in "
                        "`xcompat matrix verify --trust-ref`; in CI pass the base branch")
    parser.add_argument("--baseline", type=Path, metavar="PATH",
                        help="last release to diff the ABI against: a project folder, wheel, folder of wheels or "
                             "ABI snapshot (default for the sample: examples/sample-ext)")
    parser.add_argument("--out", type=OutputDir(), default=Path(".xcompat-out"), metavar="DIR",
                        help="output folder (default: .xcompat-out); replaced whole when the run completes")
    parser.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda", "rocm", "mps"),
                        help="device backend for the kernels (default: auto, the fallback chain)")
    parser.add_argument("--isolate", default=None, choices=("none", "file", "test"),
                        help="override tests.isolation of the matrix (local runs only)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="override tests.timeout of the matrix, seconds per test (local runs only)")
    parser.add_argument("--isolation", choices=("auto", "on", "off"), default="auto",
                        help="build isolation of the project's and the baseline's builds, as `xcompat build "
                        "--isolation`; auto: off when the project builds against a framework the runner provides "
                        "(torch in its build requirements, or imported by its setup.py), else on (default: auto)")
    parser.add_argument("--no-coverage", action="store_true", help="skip the coverage build and merge")
    lane = parser.add_argument_group("emulated lane (docs/architectures.md)")
    lane.add_argument("--arch", default=None, metavar="ARCH",
                      help="run the cells of another Linux architecture (aarch64, ppc64le, s390x) on this machine "
                      "under QEMU user mode: the wheel cross built here (else built in an emulated Debian root), "
                      "the tests and (aarch64, with torch installed in the root) the conformance kernels run in "
                      "that root, the ABI read natively; coverage, the project's operators and the checks that "
                      "load the wheel on this machine are not run (the report says so)")
    lane.add_argument("--floor", default=None, metavar="LEVEL",
                      help="with --arch: run the tests and kernels on the QEMU CPU model of this ISA level "
                      "(armv8.0-a, power8, ...), then again on the feature-rich model, overriding the matrix's "
                      "abi.isa-floors for that arch (local runs only)")


def _stage_option(parser: argparse.ArgumentParser) -> None:
    from xcompat.pipeline.registry import PIPELINE

    parser.add_argument("--stage", action="append", dest="stages", metavar="NAME", default=[],
                        help=f"run only this stage (repeatable; in the table's order): {', '.join(PIPELINE)}; "
                        "a CI job runs one stage this way")
    parser.add_argument("--expect-sha256", metavar="SHA256", default=None,
                        help="the matrix is the copy of a verified matrix (a CI job's): its bytes must have "
                        "this hash, and its signature is not checked again")
    parser.add_argument("--cell", metavar="ID", default=None,
                        help="the cell to run, one this machine serves (default: its first required cell)")
    parser.add_argument("--pythons", choices=("all", "here"), default=os.environ.get("XCOMPAT_RUN_PYTHONS"),
                        help="all: also run the cells of the matrix's other Pythons this machine has (pyenv, "
                        "uv-managed, PATH), each in a venv of its interpreter with the cells' frameworks; here: "
                        "only this interpreter's (default: $XCOMPAT_RUN_PYTHONS, else all for a project and "
                        "here for the bundled demo)")


def execute(args: argparse.Namespace) -> int:
    from xcompat.pipeline.config import resolve_config
    from xcompat.pipeline.runner import run_pipeline

    config = resolve_config(args)
    if getattr(args, "arch", None) or getattr(args, "floor", None):
        config = _with_lane(config, args)
    pythons = args.pythons or ("here" if args.project is None else "all")
    if args.cell or pythons == "here":
        from dataclasses import replace

        config = replace(config, cell=args.cell, other_pythons=pythons == "all")
    return run_pipeline(config, isolation=args.isolation, stages=args.stages or None)


def _with_lane(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    """``--arch``: the run's configuration with its emulated lane open (root made or reused)."""
    from dataclasses import replace

    from xcompat.emulation.arches import arch, is_emulated
    from xcompat.errors import UsageError
    from xcompat.log import get_logger
    from xcompat.pipeline.local import python_tag
    from xcompat.settings import is_ci

    if not args.arch:
        raise UsageError("--floor needs --arch", hint="xcompat run --arch aarch64 --floor armv8.0-a")
    row = arch(args.arch)
    if not is_emulated(row.name):
        raise UsageError(f"--arch {row.name} is this machine's own architecture: run without --arch")
    floors = config.settings.abi.isa_floors if config.settings is not None else {}
    if args.floor and args.floor != floors.get(row.name) and is_ci(os.environ):
        raise UsageError("in CI the settings come only from the verified matrix; refusing --floor",
                         hint=f"set abi.isa-floors: {{{row.name}: {args.floor}}} in the matrix and sign it")
    floor = args.floor or floors.get(row.name)
    row.cpu_model(floor)  # an unknown level: one line naming the levels there are
    from xcompat.emulation.run_lane import open_run_lane

    get_logger().info(f"opening the {row.name} lane (a Debian root under QEMU; the first run makes it: minutes)")
    lane = open_run_lane(row.name, floor=floor, python=python_tag().rstrip("t"))
    from xcompat.pipeline.lanes import lane_settings

    settings = lane_settings(config.settings) if config.settings is not None else None
    return replace(config, lane=lane, coverage=False, settings=settings)
