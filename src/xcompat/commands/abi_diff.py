"""``xcompat abi diff OLD NEW``: what a change does to the binary and Python interface."""

from __future__ import annotations

import argparse
import sys

from xcompat.outputs import OutputFile

FORMATS = ("text", "json", "markdown")
BUMPS = ("major", "minor", "patch", "none")
TOGGLES = ("auto", "on", "off")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="old wheel, folder of wheels, shared library or ABI snapshot")
    parser.add_argument("new", metavar="NEW", help="new wheel, folder of wheels or shared library")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output on stdout (default: text)")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE", help="also write the JSON result to FILE")
    parser.add_argument("--policy", metavar="FILE", help="JSON/YAML mapping finding kind -> bump (major|minor|patch|none)")
    parser.add_argument(
        "--against-version",
        action="store_true",
        help="derive the actual bump from the two package versions and fail when a finding needs more",
    )
    parser.add_argument(
        "--fail-on",
        choices=BUMPS,
        default="major",
        help="without --against-version: fail on findings needing this bump or more (default: major; none: never)",
    )
    parser.add_argument("--python-api", choices=TOGGLES, default="auto", help="compare the Python API with griffe")
    parser.add_argument("--torch-ops", choices=TOGGLES, default="auto", help="compare registered torch operators")
    parser.add_argument("--cell-id", help="the matrix cell this result belongs to")


def execute(args: argparse.Namespace) -> int:
    from xcompat.gcpause import paused_gc

    # The tables this command builds (75,000 names and rows per library for libtorch) hold no
    # reference cycles: the cyclic collector would only rescan them as they age (about 3% of a
    # libtorch diff). Switched off for the command, and back on after it (main() may be called
    # in a process that goes on).
    with paused_gc():
        return _execute(args)


def _execute(args: argparse.Namespace) -> int:
    from xcompat.abi import diff_paths
    from xcompat.abi.inputs import InputProblem
    from xcompat.abi.render import render_markdown, render_text
    from xcompat.abi.rules import PolicyError, load_policy_file
    from xcompat.abi.semver import VersionError
    from xcompat.errors import CheckFailed, InputError, UsageError
    from xcompat.jsonio import dump_json, write_json
    from xcompat.log import get_logger

    log = get_logger()
    policy = None
    try:
        if args.policy:
            pol = load_policy_file(args.policy)
            policy = {"rules": dict(pol.rules), "ignore": list(pol.ignore)}
            if pol.extension_exports is not None:
                policy["extension_exports"] = list(pol.extension_exports)
            if pol.gate is not None:
                policy["gate"] = sorted(pol.gate)
        result = diff_paths(
            args.old,
            args.new,
            policy=policy,
            against_version=args.against_version,
            fail_on=args.fail_on,
            python_api=args.python_api,
            torch_ops=args.torch_ops,
            cell_id=args.cell_id,
        )
    except PolicyError as exc:
        raise InputError(str(exc), hint="see docs/abi.md, 'Policy'") from None
    except VersionError as exc:
        raise UsageError(f"--against-version: {exc}") from None
    except InputProblem as exc:
        raise InputError(str(exc)) from None
    doc = result.to_dict()
    # The result is not validated at run time (jsonschema costs more than the whole diff of
    # libtorch_cpu.so); tests validate real results against schemas/abi-diff.schema.json.
    if args.output:
        write_json(args.output, doc)
    markdown = render_markdown(doc) if args.format == "markdown" or log.env.get("GITHUB_STEP_SUMMARY") else ""
    if args.format == "json":
        sys.stdout.write(dump_json(doc))
    elif args.format == "markdown":
        sys.stdout.write(markdown)
    else:
        sys.stdout.write(render_text(doc))
    if markdown:
        log.write_summary(markdown)  # GitHub Actions job summary; a no-op elsewhere
    if doc["status"] == "failed":
        raise CheckFailed(f"ABI check failed: {doc['summary']}")
    return 0
