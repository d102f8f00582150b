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
from pathlib import Path

from xcompat.outputs import OutputDir


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", type=Path, default=None,
                        help="project to check (default: the bundled sample project, the demo)")
    parser.add_argument("--matrix", type=Path, metavar="FILE",
                        help="matrix (default: PROJECT/.xcompat/matrix.yml; none there: run `xcompat matrix init`)")
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


def execute(args: argparse.Namespace) -> int:
    from xcompat.pipeline.config import resolve_config
    from xcompat.pipeline.runner import run_pipeline

    config = resolve_config(args)
    return run_pipeline(config, isolation=args.isolation)
