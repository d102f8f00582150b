"""One version scheme: the package version X.Y.Z is the release tag, the GitLab component
reference (@X.Y.Z), the comment next to every pinned xcompat commit (<sha> # X.Y.Z) and the
pre-commit `rev:`. No `v`-prefixed or moving references (`@v2`, `ref: v2`) anywhere users copy from."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import xcompat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[3]
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
COPIED = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md")),
          *sorted((REPO_ROOT / "docs" / "snippets").glob("*.yml")), *sorted((REPO_ROOT / "workflows").glob("*.yml")),
          *sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml")), REPO_ROOT / ".pre-commit-hooks.yaml",
          *sorted((REPO_ROOT / "templates").rglob("*.yml"))]


def test_package_version_is_the_module_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    assert xcompat.__version__ == VERSION


@pytest.mark.parametrize("path", COPIED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_reference_users_copy_names_this_version(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # Moving or v-prefixed references to xcompat itself.
    assert not re.search(r"xcompat-action[^\s]*@v\d", text), "a v-prefixed or moving action reference"
    assert not re.search(r"#\s*v\d+\.x\.y", text), "a placeholder version comment"
    for match in re.finditer(r"xcompat-action(?:/xcompat)?@(\d+\.\d+\.\d+)", text):
        assert match.group(1) == VERSION, f"component/action reference @{match.group(1)}"
    # A pinned commit of xcompat carries the version it is, as a comment.
    for line in text.splitlines():
        # A YAML pin (also inside a commented example): uses: org/xcompat-action...@<sha>, xcompat-ref: <sha>, ref: <sha>.
        pin = re.match(r"\s*(#\s*)?(-\s*)?(uses:\s*org/xcompat-action\S*@<[^>]+>|xcompat-ref:\s*<[^>]+>|ref:\s*<sha>)",
                       line)
        if not pin:
            continue
        comment = re.search(r"#\s*(\S+)", line[pin.end():])
        assert comment and comment.group(1).rstrip(":`,)") == VERSION, line
    for match in re.finditer(r"\brev:\s*(\S+)", text):
        if "xcompat-action" in text[max(0, match.start() - 200):match.start()]:
            assert match.group(1) == VERSION, f"pre-commit rev {match.group(1)}"


def test_include_template_installs_this_version_by_default() -> None:
    text = (REPO_ROOT / "templates" / "include" / "xcompat.gitlab-ci.yml").read_text()
    match = re.search(r'XCOMPAT_INSTALL_SOURCE: "([^"]+)"', text)
    assert match and match.group(1).endswith(f".git@{VERSION}"), match
