"""``xcompat abi stable TARGET``: audit an extension's use of LibTorch's stable ABI."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="extension module, wheel or folder of extensions")
    parser.add_argument("--require-stable", action="store_true",
                        help="fail on any unstable C++ torch import, even without C-shim use")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE", help="also write the JSON result to FILE")


def render_stable_text(doc: dict[str, Any]) -> str:
    lines = [f"{doc['status'].upper()}: {doc['summary']}"]
    for lib in doc["libraries"]:
        c = lib["counts"]
        lines.append(
            f"\n{lib['library']}: {lib['verdict']} (shim {c['stable_c_shim']}, header-only {c['header_only']}, "
            f"unstable C++ {c['unstable_cxx']})"
        )
        for s in lib["unstable_imports"]:
            lines.append(f"  unstable: {s['demangled']}")
        if lib["unstable_total"] > len(lib["unstable_imports"]):
            lines.append(f"  ... and {lib['unstable_total'] - len(lib['unstable_imports'])} more")
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    from xcompat.abi.links import LinkInputError
    from xcompat.abi.stable import audit_stable
    from xcompat.errors import CheckFailed, InputError
    from xcompat.jsonio import dump_json, write_json

    try:
        doc = audit_stable(args.target, require_stable=args.require_stable)
    except LinkInputError as exc:
        raise InputError(str(exc)) from None
    # Not validated at run time (importing jsonschema would cost more than the check);
    # tests validate real results against schemas/abi-stable.schema.json.
    if args.output:
        write_json(args.output, doc)
    sys.stdout.write(dump_json(doc) if args.format == "json" else render_stable_text(doc))
    # the document already says why; the exit code alone tells the caller
    return CheckFailed.exit_code if doc["status"] == "failed" else 0
