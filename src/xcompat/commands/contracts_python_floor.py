"""``xcompat contracts python-floor [PROJECT]``: the lowest Python the project's own sources
need, against its Requires-Python and the matrix's lowest Python."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", metavar="PROJECT", nargs="?", default=".",
                        help="the project's folder (default: the current one)")
    parser.add_argument("--wheel", type=Path, metavar="WHEEL",
                        help="read Requires-Python from this wheel's METADATA instead of pyproject.toml")
    parser.add_argument("--lowest-python", metavar="X.Y", help="the lowest Python the matrix tests")
    parser.add_argument("--gate", action="store_true", help="exit 1 on findings (default: report them, exit 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE",
                        help="also write the JSON result to FILE")


def execute(args: argparse.Namespace) -> int:
    from xcompat.contracts import requires_python as rp
    from xcompat.contracts.python_floor import check_python_floor
    from xcompat.contracts.result import enforce, render_text
    from xcompat.jsonio import dump_json, write_json

    root = Path(args.project)
    if args.wheel is not None:
        source, claim = str(args.wheel), rp.from_wheel(args.wheel)
    else:
        pyproject = root / "pyproject.toml"
        source, claim = str(pyproject), rp.from_pyproject(pyproject) if pyproject.is_file() else None
    lowest = rp.parse_version(args.lowest_python) if args.lowest_python else None
    doc = check_python_floor(root, requires_python=claim, source=source, lowest_python=lowest)
    if args.output:
        write_json(args.output, doc, schema="contracts-python-floor")
    sys.stdout.write(dump_json(doc) if args.format == "json" else render_text(doc))
    enforce(doc, gate=args.gate, what="python-floor")
    return 0
