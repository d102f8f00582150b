"""Privileged workflows name xcompat by commit, never by a tag that can be moved: `<sha> # v2.x.y`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [*sorted((ROOT / "workflows").glob("*.yml")), ROOT / "docs" / "snippets" / "github-workflow.yml"]
PIN = re.compile(r"^(<sha>|[0-9a-f]{40})$")
VERSION_COMMENT = re.compile(r"# v?(\d+\.\d+\.\d+|2\.x\.y)\b")  # the release the SHA is, for reviewers


def references(path: Path) -> list[tuple[str, str]]:
    """(value, its source line) of every reference to xcompat itself in a workflow."""
    document = yaml.safe_load(path.read_text())
    lines = path.read_text().splitlines()
    found = []
    for job in document.get("jobs", {}).values():
        with_ = job.get("with") or {}
        if "xcompat-ref" in with_:
            found.append(str(with_["xcompat-ref"]))
        for step in job.get("steps") or []:
            args = step.get("with") or {}
            if str(step.get("uses", "")).startswith("actions/checkout@") and "xcompat-action" in str(args.get("repository", "")):
                found.append(str(args.get("ref")))
    return [(value, next((ln for ln in lines if re.search(rf"(ref|xcompat-ref): {re.escape(value)}(?!\S)", ln)), ""))
            for value in found]


def test_every_xcompat_reference_is_a_commit_with_its_version_comment() -> None:
    seen = 0
    for path in TEMPLATES:
        for value, line in references(path):
            seen += 1
            if value.startswith("${{"):  # the reusable workflow passes its caller's pin through
                continue
            assert PIN.match(value), f"{path.name}: xcompat referenced as {value!r}; use <sha> # v2.x.y"
            assert VERSION_COMMENT.search(line), f"{path.name}: {line.strip()} lacks its version comment"
    assert seen >= 5


def test_the_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "wf.yml"
    bad.write_text("on: push\njobs:\n  a:\n    uses: ./x.yml\n    with:\n      xcompat-ref: v2 # pin\n")
    (value, _), = references(bad)
    assert not PIN.match(value)


def test_readme_shows_the_same_scheme() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "xcompat-ref: v2 " not in readme and "@v2`" not in readme
    assert re.search(r"xcompat-ref: <sha> # v?(\d+\.\d+\.\d+|2\.x\.y)", readme)
