"""``xcompat contracts stubs TARGET``: the ``.pyi`` stubs of a wheel against its runtime
modules, with mypy's stubtest."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", type=Path,
                        help="a wheel, or the folder it is installed in (for PYTHONPATH)")
    parser.add_argument("--allowlist", type=Path, metavar="FILE",
                        help="stubtest allowlist (default: .xcompat/stubtest-allowlist.txt when present)")
    parser.add_argument("--cell", metavar="ID", help="the matrix cell the result belongs to")
    parser.add_argument("--gate", action="store_true", help="exit 1 on findings (default: report them, exit 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE",
                        help="also write the JSON result to FILE")


def execute(args: argparse.Namespace) -> int:
    from xcompat.contracts.allowlist import DEFAULT, check_allowlist
    from xcompat.contracts.result import enforce, render_text
    from xcompat.contracts.stubs import check_stubs
    from xcompat.contracts.wheel_site import unpack_wheel
    from xcompat.errors import InputError
    from xcompat.jsonio import dump_json, write_json

    allowlist = args.allowlist if args.allowlist is not None else (DEFAULT if DEFAULT.is_file() else None)
    if allowlist is not None:
        check_allowlist(allowlist)
        allowlist = allowlist.resolve()
    target: Path = args.target
    if not target.exists():
        raise InputError("not found", file=target)
    with tempfile.TemporaryDirectory(prefix="xcompat-stubs-") as tmp:
        site = target
        if target.is_file():
            site = Path(tmp) / "site"
            unpack_wheel(target, site)
        doc = check_stubs(site.resolve(), allowlist=allowlist, cell_id=args.cell)
    if args.output:
        write_json(args.output, doc, schema="contracts-stubs")
    sys.stdout.write(dump_json(doc) if args.format == "json" else render_text(doc))
    enforce(doc, gate=args.gate, what="stubs")
    return 0
