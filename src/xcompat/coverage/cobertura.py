"""Cobertura XML for GitLab's ``artifacts:reports:coverage_report`` (and most other readers).

GitLab's documented limits for this report are data here (docs.gitlab.com, "Test coverage
visualization" / "Cobertura coverage report", section *Limits*): at most 100 ``<source>``
nodes (``MAX_SOURCES`` in GitLab's SAX parser; extra sources give mismatched or missing
lines) and at most 10 MiB per Cobertura file. We always write exactly one ``<source>`` (the
source root) with class file names relative to it. When the full report would exceed the
size limit, only files touched by the change are kept (GitLab draws coverage only on the
merge request's changed files), then whole files are kept in path order while they fit;
what was left out is returned so the JSON report can say so.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from xcompat.coverage.merge import MergedFile

# Sources: docs.gitlab.com/ci/testing/code_coverage/cobertura/ ("Limits"); gitlab-org/gitlab
# issue 285132 (document the 100-source limit, MAX_SOURCES in the SAX parser) and merge
# request 76159 (document the 10 MiB limit, pipeline artifact size).
GITLAB_COBERTURA_LIMITS = {
    "max_bytes": 10 * 1024 * 1024,
    "max_sources": 100,
}


@dataclass(frozen=True)
class CoberturaOutput:
    xml: str
    files_written: int
    files_omitted: int
    reason: str  # why files were omitted ("" when none were)


def _rate(covered: int, valid: int) -> str:
    return f"{covered / valid:.4f}" if valid else "1"


def _class_xml(f: MergedFile) -> str:
    name = f.path.rsplit("/", 1)[-1]
    lines = "".join(f'<line number="{n}" hits="{h}" branch="false"/>' for n, h in zip(f.lines, f.hits, strict=False))
    return (
        f'<class name={quoteattr(name)} filename={quoteattr(f.path)} line-rate="{_rate(f.covered, f.valid)}" '
        f'branch-rate="0" complexity="0"><methods/><lines>{lines}</lines></class>'
    )


def render_cobertura(
    files: Iterable[MergedFile],
    *,
    source: str,
    changed_paths: frozenset[str] | None = None,
    max_bytes: int = GITLAB_COBERTURA_LIMITS["max_bytes"],
    timestamp: int | None = None,
) -> CoberturaOutput:
    all_files = sorted(files, key=lambda f: f.path)
    chunks = {f.path: _class_xml(f) for f in all_files}
    valid = sum(f.valid for f in all_files)
    covered = sum(f.covered for f in all_files)
    head = (
        '<?xml version="1.0" ?>\n'
        "<!DOCTYPE coverage SYSTEM 'http://cobertura.sourceforge.net/xml/coverage-04.dtd'>\n"
        f'<coverage version="xcompat" timestamp="{(timestamp if timestamp is not None else int(time.time())) * 1000}" '
        f'lines-valid="{valid}" lines-covered="{covered}" line-rate="{_rate(covered, valid)}" '
        'branches-valid="0" branches-covered="0" branch-rate="0" complexity="0">\n'
        f"<sources><source>{_text(source)}</source></sources>\n<packages>\n"
    )
    tail = "</packages>\n</coverage>\n"
    keep = all_files
    reason = ""
    # Sizes are counted in characters; the XML is ASCII except for non-ASCII file names,
    # which the final byte check below catches.
    if (
        len(head)
        + len(tail)
        + sum(len(_package_open(_package(f.path), "0.0000")) + 23 + len(chunks[f.path]) for f in all_files)
        > max_bytes
    ):
        if changed_paths is not None:
            keep = [f for f in all_files if f.path in changed_paths]
            reason = (
                f"the full report exceeds GitLab's {max_bytes} byte limit; kept only files the change touches"
            )
        else:
            reason = f"the full report exceeds GitLab's {max_bytes} byte limit"
        size = len(head) + len(tail)
        opened: set[str] = set()
        fitted = []
        for f in keep:
            pkg = _package(f.path)
            add = len(chunks[f.path].encode("utf-8"))
            if pkg not in opened:
                add += len(_package_open(pkg, "0.0000").encode("utf-8")) + len("</classes></package>\n")
            if size + add > max_bytes:
                continue
            size += add
            opened.add(pkg)
            fitted.append(f)
        if len(fitted) < len(keep):
            reason += "; files that did not fit were left out"
        keep = fitted
    packages: dict[str, list[MergedFile]] = {}
    for f in keep:
        packages.setdefault(_package(f.path), []).append(f)
    parts = [head]
    for pkg in sorted(packages):
        members = packages[pkg]
        pv = sum(f.valid for f in members)
        pc = sum(f.covered for f in members)
        parts.append(_package_open(pkg, _rate(pc, pv)))
        parts.extend(chunks[f.path] for f in members)
        parts.append("</classes></package>\n")
    parts.append(tail)
    return CoberturaOutput("".join(parts), len(keep), len(all_files) - len(keep), reason)


def _package_open(pkg: str, rate: str) -> str:
    return f'<package name={quoteattr(pkg)} line-rate="{rate}" branch-rate="0" complexity="0"><classes>'


def _package(path: str) -> str:
    return path.rsplit("/", 1)[0].replace("/", ".") if "/" in path else "."


def _text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
