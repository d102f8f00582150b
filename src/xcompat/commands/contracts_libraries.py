"""``xcompat contracts libraries --import MODULE``: the shared objects a fresh interpreter
maps after importing MODULE, their owners, and duplicate runtimes or stray libraries."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import", dest="modules", action="append", required=True, metavar="MODULE",
                        help="module to import first (repeatable)")
    parser.add_argument("--path", action="append", type=Path, default=[], metavar="SITE",
                        help="folder to put on the import path, such as an installed wheel (repeatable)")
    parser.add_argument("--project", metavar="NAME", help="the project's distribution name, to mark its libraries")
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help="an earlier result to compare with (another cell, the last release)")
    parser.add_argument("--tests-result", type=Path, metavar="TEST_JSON",
                        help="a test result (xcompat test --json) whose test processes' libraries, read at their end, "
                        "join the import's")
    parser.add_argument("--cell", metavar="ID", help="the matrix cell the result belongs to")
    parser.add_argument("--gate", action="store_true", help="exit 1 on findings (default: report them, exit 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE",
                        help="also write the JSON result to FILE")


def execute(args: argparse.Namespace) -> int:
    from xcompat.contracts.compare import compare_snapshots
    from xcompat.contracts.import_probe import probe_imports
    from xcompat.contracts.result import enforce, render_text
    from xcompat.contracts.test_maps import read_test_maps
    from xcompat.jsonio import dump_json, read_json, write_json

    baseline = read_json(args.baseline, schema="contracts-runtime-libraries") if args.baseline else None
    tests = read_test_maps(args.tests_result) if args.tests_result else None
    doc = probe_imports(args.modules, paths=[p.resolve() for p in args.path], project=args.project,
                        cell_id=args.cell, tests=tests)
    if baseline is not None:
        doc["changes"] = compare_snapshots(baseline, doc)
    if args.output:
        write_json(args.output, doc, schema="contracts-runtime-libraries")
    text = render_text(doc)
    changes = doc.get("changes")
    for change in changes if isinstance(changes, list) else []:
        text += f"  {change['change']}: {change['library']}\n"
    sys.stdout.write(dump_json(doc) if args.format == "json" else text)
    enforce(doc, gate=args.gate, what="libraries")
    return 0
