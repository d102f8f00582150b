"""``xcompat abi isa TARGET... --floor LEVEL``: instructions above an ISA floor, per function."""

from __future__ import annotations

import argparse
from pathlib import Path

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="+", type=Path, metavar="TARGET",
                        help="wheel, folder of wheels or shared library")
    parser.add_argument("--floor", required=True, metavar="LEVEL",
                        help="the ISA level the wheel promises: x86-64, x86-64-v2, x86-64-v3, armv8.0-a, ...")
    parser.add_argument("--json", type=OutputFile(), metavar="FILE", help="write the result document here")
    parser.add_argument("--cell-id", metavar="ID", help="the matrix cell this scan belongs to")


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import CheckFailed, InputError
    from xcompat.isa.levels import all_levels
    from xcompat.isa.wheels import isa_document, scan_targets
    from xcompat.jsonio import write_json
    from xcompat.log import get_logger

    arches = [arch for arch, rules in all_levels().items() if args.floor in rules.levels]
    if not arches:
        known = ", ".join(level for rules in all_levels().values() for level in rules.levels)
        raise InputError(f"--floor {args.floor!r} is not a known ISA level", hint=f"use one of: {known}")
    scans = scan_targets(args.targets, args.floor)  # an object of another arch: InputError naming both
    document = isa_document(scans, arch=arches[0], floor=args.floor, cell_id=args.cell_id)
    log = get_logger()
    for scan in scans:
        for function in scan.functions:
            log.info(f"{scan.path}: {function.function} needs {function.level} ({scan.verdict}): "
                     f"{'; '.join(function.examples)}")
    if args.json:
        write_json(args.json, document, schema="isa")
    if document["status"] == "failed":
        raise CheckFailed(document["summary"])
    log.info(document["summary"])
    return 0
