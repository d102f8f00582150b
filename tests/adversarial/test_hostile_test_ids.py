"""A pull request names its own tests: whatever a node id, a message or a result field holds, the
report's Markdown (PR comment, check run, job summary, GitLab note), the HTML page, the JUnit
artifact and the privileged step's log show it as inert text.

The suite is real: a conftest gives its items hostile node ids (pytest lets it), `xcompat test` runs
it, and `xcompat report` renders the results. The Markdown is rendered by cmark-gfm, GitHub's own
renderer, with raw HTML allowed, to check that no link or image from the pull request is live.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tests.helpers.action import plan_document

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm is pinned in the test extras; install with make test")

CELL = "py3.12-linux-x86_64-cpu"
EVIL = "evil.example"
HOSTILE_ID = (
    "tests/t.py\n\n@octocat please re-authorize: [Sign in](https://evil.example/login)\n\n"
    "![x](https://evil.example/pixel.png) <img src=https://evil.example/i.png> https://evil.example/bare "
    "www.evil.example #1 !2 ~bug %v1 \n/approve\n::add-mask::secret\n\x1b[31mred\x1b[0m ::test_x"
)
LONG_ID = "tests/t.py::test_" + "L" * 70_000

CONFTEST = f"""
import pytest

HOSTILE = {HOSTILE_ID!r}
LONG = {LONG_ID!r}

def _plant(item, nodeid):
    try:  # pytest 9 keeps a structured id
        from _pytest.nodeid import coerce_node_id
    except ImportError:
        item._nodeid = nodeid
    else:
        item._id = coerce_node_id(nodeid)

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_hostile":
            _plant(item, HOSTILE)
        elif item.name == "test_long":
            _plant(item, LONG)
"""

TESTS = """
def test_hostile():
    assert False, "@octocat [Sign in](https://evil.example/login)\\n\\n/merge\\n::error::planted"

def test_long():
    assert False

def test_plain_failure():
    assert 1 == 2, "the failure a reviewer must still see"
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-ids")
    suite = root / "suite"
    (suite / "tests").mkdir(parents=True)
    (suite / "tests" / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (suite / "tests" / "test_t.py").write_text(textwrap.dedent(TESTS))
    out = root / "results" / CELL
    out.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "CI", "XCOMPAT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "test", str(suite / "tests"), "--isolate", "none", "--no-warm-torch",
         "--cell-id", CELL, "--json", str(out / "test.json")],
        capture_output=True, text=True, env=env, cwd=suite, timeout=300, check=False,
    )
    assert proc.returncode == 1 and (out / "test.json").is_file(), proc.stdout + proc.stderr
    names = {t.get("nodeid") for t in json.loads((out / "test.json").read_text())["tests"]}
    assert HOSTILE_ID in names and LONG_ID in names, "the conftest did not plant its node ids"
    (root / "plan.json").write_text(json.dumps(plan_document((CELL, True))))
    return root


def _report(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "CI", "XCOMPAT_"))}
    return subprocess.run([sys.executable, "-m", "xcompat", "report", str(root / "results"), "--plan",
                           str(root / "plan.json"), *args], capture_output=True, text=True, env=env, cwd=root,
                          timeout=120, check=False)


def _outside_code(markdown: str) -> str:
    """The Markdown source less its code: fenced blocks, code spans and <code> elements."""
    text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1[ \t]*$", "", markdown)
    text = re.sub(r"(?s)<code>.*?</code>", "", text)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [f"<{tag} {name}={value}>" for name, value in attrs if value and EVIL in value]


def _live_links(html_text: str) -> list[str]:
    """Elements of the rendered page with an attribute pointing at the attacker's host."""
    parser = _Links()
    parser.feed(html_text)
    return parser.found


@pytest.mark.parametrize("budget", ["pr_comment", "check_run_summary", "job_summary", "gitlab_note"])
def test_markdown_from_hostile_ids_mentions_links_and_commands_nothing(results: Path, budget: str) -> None:
    proc = _report(results, "--budget", budget)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    markdown = proc.stdout
    prose = _outside_code(markdown)
    assert not re.search(r"(?<![\w\u2060])@octocat", prose), "a live @mention outside code"
    for ref in (r"#1\b", r"!2\b", r"~bug\b", r"%v1\b"):
        assert not re.search(rf"(?<![\w\u2060&]){ref}", prose), f"a live reference {ref} outside code"
    if budget == "gitlab_note":
        assert not re.search(r"(?m)^\s*/(approve|merge)", markdown), "a line that starts a GitLab quick action"
    rendered = cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)
    assert _live_links(rendered) == [], "a link or image from the pull request is live"
    assert "<img" not in rendered, "an image from the pull request is rendered"


def test_one_long_test_id_does_not_push_the_rest_of_the_report_out(results: Path) -> None:
    proc = _report(results, "--budget", "pr_comment")
    markdown = proc.stdout
    assert "### Failures" in markdown, "the failures section was dropped"
    assert "test_plain_failure" in markdown and "the failure a reviewer must still see" in markdown
    assert "L" * 1000 not in markdown, "a field was shown uncapped"
    assert len(markdown) > 2000, "the report shrank to its headline"


def test_the_html_page_and_junit_artifact_carry_the_ids_inertly(results: Path) -> None:
    html_out = results / "report.html"
    proc = _report(results, "--format", "html", "--out", str(html_out))
    assert proc.returncode == 1, proc.stderr
    page = html_out.read_text()
    assert _live_links(page) == [] and "<img src=https://evil" not in page
    assert "L" * 5000 not in page
    bundle = results / "gitlab-bundle"
    proc = _report(results, "--gitlab", "--no-comment", "--bundle-dir", str(bundle))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    junit = (bundle / "xcompat-junit.xml").read_text()
    ET.fromstring(junit.split("\n", 1)[1])  # well-formed: control characters are not carried
    assert "\x1b" not in junit and "L" * 5000 not in junit


def test_the_log_shows_no_workflow_command_or_escape_from_a_test_id(results: Path) -> None:
    for fmt in ("text", "markdown"):
        proc = _report(results, "--format", fmt)
        for stream in (proc.stdout, proc.stderr):
            assert "\x1b" not in stream, f"an escape sequence reached the log ({fmt})"
            commands = [line for line in stream.splitlines() if line.lstrip().startswith("::")]
            assert commands == [], f"lines a runner reads as workflow commands ({fmt}): {commands[:3]}"


def test_a_result_kind_never_becomes_a_path(tmp_path: Path) -> None:
    """A fork's bundle whose result names its kind as a path writes nothing outside the new bundle."""
    bundle = tmp_path / "in" / "bundle"
    (bundle / "results" / CELL).mkdir(parents=True)
    (bundle / "plan.json").write_text(json.dumps(plan_document((CELL, True))))
    for depth, name in enumerate(("PWNED", "deep/PWNED2")):
        kind = "x/" + "../" * (4 + depth) + str(tmp_path / name)
        doc = {"version": 1, "kind": kind, "cell_id": CELL, "status": "passed", "summary": "planted"}
        (bundle / "results" / CELL / f"r{depth}.json").write_text(json.dumps(doc))
    (bundle / "results" / CELL / "test.json").write_text(json.dumps(
        {"version": 1, "kind": "test", "cell_id": CELL, "status": "passed", "summary": "1 passed"}))
    out = tmp_path / "in" / "work"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "CI", "XCOMPAT_"))}
    proc = subprocess.run([sys.executable, "-m", "xcompat", "report", "--from-artifact", str(bundle), "--gitlab",
                           "--no-comment", "--bundle-dir", str(out / "R")],
                          capture_output=True, text=True, env=env, cwd=out, timeout=120, check=False)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1, 2), proc.stderr
    planted = [p for p in tmp_path.rglob("PWNED*") if p.is_file()]
    assert planted == [], f"a result's kind became a path: {planted}"
    written = sorted(p.name for p in (out / "R" / "results").iterdir()) if (out / "R" / "results").is_dir() else []
    assert all(re.fullmatch(r"\d{4}-[a-z]+\.json|settings\.json", name) for name in written), written
