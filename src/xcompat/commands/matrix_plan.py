"""``xcompat matrix plan FILE --format json|github|gitlab|cibuildwheel``: expand the matrix into CI jobs."""

from __future__ import annotations

import argparse

from xcompat.outputs import OutputFile

FORMATS = ("json", "github", "gitlab", "cibuildwheel")
# GitHub Actions caps one step output at 1 MB.
GITHUB_OUTPUT_LIMIT = 1_000_000


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="matrix file (.xcompat/matrix.yml); verify it first")
    parser.add_argument(
        "--format", "-f", choices=FORMATS, default="json", help="output format (default json)"
    )
    parser.add_argument("--output", "-o", type=OutputFile(), metavar="PATH", help="write to PATH instead of stdout")
    parser.add_argument(
        "--platform", choices=("linux", "macos", "windows"), help="only cells of this platform"
    )
    parser.add_argument("--arch", help="only cells of this architecture")
    parser.add_argument(
        "--backend",
        action="append",
        choices=("cpu", "cuda", "rocm", "mps"),
        help="only cells of this backend (repeatable)",
    )
    parser.add_argument("--python", help="only cells of this Python version")
    parser.add_argument(
        "--cibuildwheel-version",
        type=int,
        metavar="MAJOR",
        help="cibuildwheel major version to select for (default: the installed one)",
    )
    parser.add_argument(
        "--expect-sha256",
        metavar="HEX",
        help="refuse unless the file's SHA-256 is HEX (the value matrix verify printed)",
    )


def execute(args: argparse.Namespace) -> int:
    import json
    import sys

    from xcompat.errors import VerificationError
    from xcompat.jsonio import atomic_write_text, dump_json
    from xcompat.log import get_logger
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import cells_for_runner, expand, render

    log = get_logger()
    matrix = load_matrix(args.file)
    if args.expect_sha256 and matrix.sha256 != args.expect_sha256.lower():
        raise VerificationError(
            f"matrix changed since it was verified: sha256 {matrix.sha256}, expected {args.expect_sha256}",
            file=args.file,
        )
    cells = expand(matrix)
    if args.platform or args.arch or args.backend or args.python:
        cells = cells_for_runner(
            cells, platform=args.platform, arch=args.arch, backends=args.backend, python=args.python
        )
    document = render(args.format, matrix, cells, cibuildwheel_major=args.cibuildwheel_version)
    limit = document.get("max_jobs")
    if limit is not None and document["jobs"] > limit:
        log.warning(
            f"{document['jobs']} jobs exceed the {args.format} limit of {limit} per matrix; "
            "split the plan with --backend or --platform"
        )
    for item in document.get("unsupported", []):
        log.warning(f"{item['identifier']}: {item['reason']}")
    # Pretty for a person at a terminal; compact (the C encoder, ~10x faster) for machines.
    pretty = not args.output and sys.stdout.isatty()
    text = (
        dump_json(document)
        if pretty
        else json.dumps(document, separators=(",", ":"), ensure_ascii=False) + "\n"
    )
    if args.output:
        atomic_write_text(args.output, text)
        log.info(f"{len(cells)} cells -> {args.output}")
    else:
        print(text, end="")
    outputs = {"plan": text.strip() if not pretty else json.dumps(document, separators=(",", ":"))}
    if args.format == "github":
        outputs["matrix"] = json.dumps(document["matrix"], separators=(",", ":"))
    outputs["cells"] = str(len(cells))
    for name, value in outputs.items():
        if len(value.encode("utf-8")) > GITHUB_OUTPUT_LIMIT:
            log.warning(f"step output {name!r} skipped: larger than GitHub's 1 MB per output; use --output")
            continue
        log.set_output(name, value)
    return 0
