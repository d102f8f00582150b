"""``xcompat kernels operators``: check the PyTorch operators a built project registers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--site", type=Path, required=True, metavar="SITE_FOLDER",
                        help="the folder the project's wheel is installed in (pip install --target)")
    parser.add_argument("--samples", type=Path, default=None, metavar="FILE",
                        help="the samples file (default: .xcompat/operators.py when it exists)")
    parser.add_argument("--device", default="cpu", help="the device to check on: cpu, cuda, cuda:1, mps (default: cpu)")
    parser.add_argument("--tolerances", type=Path, default=None, metavar="FILE",
                        help="a JSON or TOML table of dtype -> {rtol, atol} overriding the defaults")
    parser.add_argument("--no-opcheck", action="store_true", help="skip torch.library.opcheck")
    parser.add_argument("--cell-id", help="the matrix cell this result belongs to")
    parser.add_argument("--json", type=OutputFile(), metavar="OUT", help="write the versioned JSON result to OUT ('-' for stdout)")


def render_text(doc: dict[str, Any]) -> str:
    lines = []
    for op in doc["operators"]:
        keys = ", ".join(op["dispatch_keys"]) or "none"
        lines.append(f"{op['name']:40} {op['status']:14} kernels: {keys}")
        if op["reason"]:
            lines.append(f"    {op['reason']}")
        for check in op["checks"]:
            if check["status"] == "failed":
                lines.append(f"    FAILED {check['name']}: {check['detail']}")
    lines.append(f"status: {doc['status']} - {doc['summary']}")
    return "\n".join(lines) + "\n"


def _samples_path(given: Path | None) -> Path | None:
    if given is not None:
        return given
    default = Path(".xcompat") / "operators.py"
    return default if default.is_file() else None


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import CheckFailed, InputError
    from xcompat.jsonio import dump_json, validate, write_json
    from xcompat.operators import run_operators
    from xcompat.testing.reference import load_tolerances

    tolerances = None
    if args.tolerances is not None:
        try:
            tolerances = load_tolerances(args.tolerances)
        except (OSError, ValueError) as exc:
            raise InputError(str(exc), hint="a table of dtype -> {rtol, atol}") from None
    doc = run_operators(args.site, samples=_samples_path(args.samples), device=args.device,
                        cell_id=args.cell_id, tolerances=tolerances, opcheck=not args.no_opcheck)
    validate("operators", doc, source="operators result")
    if str(args.json) == "-":
        sys.stdout.write(dump_json(doc))
    else:
        if args.json:
            write_json(args.json, doc, schema="operators")
        sys.stdout.write(render_text(doc))
    if doc["status"] == "failed":
        raise CheckFailed(f"kernels operators: {doc['summary']}")
    return 0
