"""``xcompat abi links TARGET --torch T ...``: would the extension import with each torch?"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="extension module, wheel or folder of extensions")
    parser.add_argument("--torch", action="append", required=True, metavar="SITE_PACKAGES_OR_WHEEL",
                        help="a torch to check against: site-packages, a torch folder or a torch wheel (repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE", help="also write the JSON result to FILE")


def render_links_text(doc: dict[str, Any]) -> str:
    lines = [f"{doc['status'].upper()}: {doc['summary']}"]
    for t in doc["torches"]:
        c = t["counts"]
        lines.append(
            f"\ntorch {t['torch_version'] or '?'} ({t['variant']}, {t['torch']}): {t['status']}; "
            f"{c['checked']} imports checked, {c['resolved_torch']} from torch, {t['seconds']:.3f} s"
        )
        for lib in t["missing_libraries"]:
            lines.append(f"  {lib['library']}: needs {lib['needed']}, which this torch does not have")
        for m in t["missing"]:
            lines.append(f"  {m['library']}: undefined symbol {m['demangled']}")
        for u in t["unchecked"]:
            lines.append(f"  not checked: {u}")
    for own in doc.get("own_cxx_runtime", ()):
        lines.append(f"\nown C++ runtime: {own['finding']}; torch's shared libstdc++.so.6 is a second one "
                     "(rebuild without -static-libstdc++)")
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    from xcompat.abi.links import LinkInputError, check_links
    from xcompat.errors import CheckFailed, InputError
    from xcompat.jsonio import dump_json, write_json

    try:
        doc = check_links(args.target, args.torch)
    except LinkInputError as exc:
        raise InputError(str(exc)) from None
    # Not validated at run time (importing jsonschema would cost more than the check);
    # tests validate real results against schemas/abi-links.schema.json.
    if args.output:
        write_json(args.output, doc)
    sys.stdout.write(dump_json(doc) if args.format == "json" else render_links_text(doc))
    # the document already says why; the exit code alone tells the caller
    return CheckFailed.exit_code if doc["status"] == "failed" else 0
