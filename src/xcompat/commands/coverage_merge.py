"""xcompat coverage merge: merge cell artifacts into Cobertura XML, JSON and Markdown, with diff coverage."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.outputs import OutputDir

if TYPE_CHECKING:
    from xcompat.coverage.report import MergedReport


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "cells",
        nargs="+",
        type=Path,
        metavar="CELL_FILE",
        help="artifacts of 'xcompat coverage collect' (folders are searched for *.json)",
    )
    parser.add_argument(
        "--repo",
        default=Path("."),
        type=Path,
        metavar="DIR",
        help="source root the artifacts' paths are relative to (default: .)",
    )
    parser.add_argument(
        "--base-ref",
        metavar="REF",
        help="git ref to compute diff coverage against (merge base with HEAD), e.g. origin/main",
    )
    parser.add_argument(
        "--committed-only",
        action="store_true",
        help="diff against HEAD only; ignore staged and unstaged changes",
    )
    parser.add_argument(
        "--threshold-overall", type=float, metavar="P", help="minimum overall line coverage, percent"
    )
    parser.add_argument(
        "--threshold-diff", type=float, metavar="P", help="minimum coverage of changed lines, percent"
    )
    parser.add_argument(
        "--matrix",
        type=Path,
        metavar="FILE",
        help="take thresholds from the matrix's coverage settings (options win)",
    )
    parser.add_argument(
        "--cobertura-source",
        metavar="PATH",
        help="<source> written into the Cobertura XML (default: the absolute --repo path)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="status 'failed' when any input could not be read"
    )
    parser.add_argument(
        "--out-dir",
        required=True,
        type=OutputDir(),
        metavar="DIR",
        help="writes coverage.xml (Cobertura), coverage.json and coverage.md here",
    )


def _log_merge_problems(report: MergedReport, inputs: int) -> None:
    """Warn about each input that could not be merged; refuse when none could."""
    from xcompat.errors import InputError
    from xcompat.log import get_logger

    log = get_logger()
    for problem in report.result.errors:
        log.warning(
            f"{problem.message}"
            + (f" (cell {problem.cell_id})" if problem.cell_id else "")
            + "; merged the rest",
            file=problem.file,
        )
    for warning in report.result.warnings:
        log.warning(warning)
    if not report.result.cells:
        raise InputError(
            f"none of the {inputs} coverage artifact(s) could be merged",
            details=[str(e) for e in report.result.errors[:10]],
        )


def _announce(doc: dict[str, Any], prefix: str) -> None:
    """Step outputs, the first uncovered changed lines as annotations, and the gate's checks."""
    from xcompat.log import get_logger

    log = get_logger()
    log.set_output(
        "coverage-percent", "" if doc["totals"]["percent"] is None else str(doc["totals"]["percent"])
    )
    if doc["diff"] is not None:
        log.set_output(
            "coverage-diff-percent", "" if doc["diff"]["percent"] is None else str(doc["diff"]["percent"])
        )
        shown = 0
        for f in doc["diff"]["files"]:
            for start, end in f["uncovered_ranges"]:
                if shown < 10:
                    lines = f"lines {start}-{end}" if end != start else f"line {start}"
                    log.warning(
                        f"{lines} changed but not covered by any cell", file=prefix + f["path"], line=start
                    )
                shown += 1
    for check in doc["gate"]:
        (log.success if check["passed"] else log.error)(f"coverage {check['name']}: {check['reason']}")


def execute(args: argparse.Namespace) -> int:
    from xcompat.coverage.diff import changed_lines
    from xcompat.coverage.report import (
        COBERTURA_NAME,
        JSON_NAME,
        MARKDOWN_NAME,
        MergeOptions,
        cell_sources,
        merge_coverage,
    )
    from xcompat.coverage.thresholds import resolve_thresholds
    from xcompat.errors import UsageError
    from xcompat.jsonio import atomic_write_text, write_json
    from xcompat.log import get_logger

    log = get_logger()
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo} is not a folder")
    thresholds = resolve_thresholds(args.threshold_overall, args.threshold_diff, args.matrix)
    own_output = (args.out_dir / JSON_NAME).resolve()
    # A rerun into a folder among the inputs must not read its own previous coverage.json.
    cells = tuple(p for p in cell_sources(args.cells) if p.resolve() != own_output)
    if not cells:
        raise UsageError("no coverage artifacts found in the given folders")
    changed = None
    prefix = ""  # annotations name files relative to the git top level
    if args.base_ref:
        diff = changed_lines(args.repo, args.base_ref, include_uncommitted=not args.committed_only)
        changed, prefix = diff.files, diff.prefix
    options = MergeOptions(
        cell_files=cells,
        repo=args.repo,
        base_ref=args.base_ref,
        thresholds=thresholds,
        cobertura_source=args.cobertura_source,
        strict=args.strict,
    )
    with log.group(f"coverage merge ({len(cells)} artifacts)"):
        report = merge_coverage(options, changed=changed)
    _log_merge_problems(report, len(cells))
    doc = report.document
    write_json(args.out_dir / JSON_NAME, doc, schema="coverage")
    atomic_write_text(args.out_dir / COBERTURA_NAME, report.cobertura)
    atomic_write_text(args.out_dir / MARKDOWN_NAME, report.markdown)
    if doc["cobertura"]["files_omitted"]:
        log.warning(
            f"{COBERTURA_NAME}: {doc['cobertura']['files_omitted']} file(s) left out: "
            f"{doc['cobertura']['omitted_reason']}"
        )
    log.write_summary(report.markdown)
    _announce(doc, prefix)
    log.info(f"{args.out_dir}: {doc['summary']}")
    return 0 if doc["status"] == "passed" else 1
