"""``xcompat abi snapshot TARGET -o FILE``: a small gzipped ABI manifest to diff against later."""

from __future__ import annotations

import argparse

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="wheel, folder of wheels or shared library")
    parser.add_argument("-o", "--output", type=OutputFile(), metavar="FILE", required=True,
                        help="where to write the manifest (gzipped unless FILE ends in .json)")
    parser.add_argument("--python-api", choices=("auto", "on", "off"), default="auto",
                        help="include the Python API (griffe)")
    parser.add_argument("--torch-ops", choices=("auto", "on", "off"), default="auto",
                        help="include registered torch operators")


def execute(args: argparse.Namespace) -> int:
    from xcompat.abi.inputs import InputProblem, load_manifest
    from xcompat.abi.manifest import write_snapshot
    from xcompat.errors import InputError
    from xcompat.log import get_logger

    try:
        manifest = load_manifest(args.target, python_api=args.python_api, torch_ops=args.torch_ops)
    except InputProblem as exc:
        raise InputError(str(exc)) from None
    path = write_snapshot(manifest, args.output)
    s = manifest.summary()
    get_logger().info(
        f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB): {s['libraries']} libraries, "
        f"{s['exported_symbols']} exported symbols"
    )
    return 0
