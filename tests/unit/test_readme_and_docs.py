"""The README's promises: its snippets are the linted files, its links resolve, its exit codes are the code's."""

import re
from pathlib import Path

from xcompat import errors

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_snippets_are_the_linted_snippet_files_verbatim():
    for name in ("github-workflow.yml", "gitlab-ci.yml"):
        snippet = (ROOT / "docs" / "snippets" / name).read_text().rstrip()
        assert snippet in README, f"README lost the tested snippet docs/snippets/{name}"


def test_quick_start_shows_exactly_the_two_commands():
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    assert block.strip().splitlines() == ["make demo", "make test"]


def test_every_relative_link_resolves():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links, "README has no links"
    for link in links:
        if "://" not in link:
            assert (ROOT / link).exists(), link


def test_exit_code_table_matches_the_exception_tree():
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", README, flags=re.MULTILINE)}
    owned = {cls.exit_code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.XcompatError)}
    assert owned | {0} == documented
