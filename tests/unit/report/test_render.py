import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from tests.helpers.report import (
    abi_result,
    make_cell,
    make_plan,
    make_test,
    make_test_result,
    mixed_results,
    stage_result,
)

from xcompat.jsonio import validate
from xcompat.report import build_report, render, write_html
from xcompat.report.artifacts import codequality, junit_xml
from xcompat.report.load import parse_result


@pytest.fixture(scope="module")
def mixed():
    plan, results = mixed_results()
    return build_report(results, plan, artifact_url="https://ci.example/run/9"), [parse_result(r, f"r{i}") for i, r in enumerate(results)]


def test_json_output_validates_against_its_schema(mixed):
    report, _ = mixed
    document = json.loads(render(report, "json"))
    validate("report", document)
    assert document["version"] == 1 and document["conclusion"] == "failure"
    assert document["counts"]["missing"] == 1


def test_json_schema_rejects_a_broken_report(mixed):
    from xcompat.errors import InputError

    document = json.loads(render(mixed[0], "json"))
    document["cells"][0]["status"] = "green"
    with pytest.raises(InputError, match=r"cells\[0\]\.status"):
        validate("report", document)


def test_markdown_grid_shows_every_status_distinctly(mixed):
    text = render(mixed[0], "markdown")
    grid = text.split("### Matrix", 1)[1].split("###", 1)[0]
    for word in ("✅ passed", "❌ failed", "💥 crashed", "⛔ missing", "⚠️ fallback"):
        assert word in grid  # the legend
    rows = {line.split("|")[1].strip(): line for line in grid.splitlines() if line.startswith(("| linux", "| macos"))}
    assert "tests ✅ 1/1" in rows["linux x86\\_64 cpu"]
    assert "tests ❌ 1/2" in rows["linux x86\\_64 cuda12.8"]
    assert "tests 💥 0/1" in rows["linux aarch64 cpu"] and "💥 tests" not in rows["linux aarch64 cpu"]  # one symbol, not two
    assert "⛔ no result" in rows["macos arm64 mps"]
    assert "<sub>" in rows["linux x86\\_64 rocm6.2"] and "optional" in rows["linux x86\\_64 rocm6.2"]
    # Failures come before ABI and coverage.
    assert text.index("### Failures") < text.index("### ABI") < text.index("### Coverage")


def test_untrusted_text_cannot_break_markdown_or_mention_people():
    cell = make_cell()
    name = "tests/t.py::test_x[a|b`c@octocat<script>]"
    result = make_test_result(cell.id, [make_test(name, "failed", message="@octocat | <img src=x> ```", tail="```\n@octocat\n```")])
    text = render(build_report([result], make_plan([cell])), "markdown")
    assert "<script>" not in text and "<img" not in text
    outside_code = re.sub(r"(`{3,})text\n.*?\n\1", "", text, flags=re.DOTALL)
    assert "@octocat" not in outside_code.replace("@\u2060octocat", "")  # mentions inside code blocks do not notify
    # the log tail fence is longer than any fence inside it
    assert "````text\n```\n@octocat\n```\n````" in text


def test_table_cells_escape_pipes():
    from xcompat.report.markdown.blocks import code, inline, md_table

    row = md_table(["a", "b"], [[code("x|y`z"), inline("p|q")]]).splitlines()[2]
    assert len(re.findall(r"(?<!\\)\|", row)) == 3


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.attrs = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)


def test_html_is_self_contained(mixed, tmp_path):
    path = write_html(mixed[0], tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(text)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert not [v for k, v in parser.attrs if k in ("src", "href") and v and not v.startswith("#")]
    for status in ("passed", "failed", "crashed", "missing", "fallback"):
        assert f'class="chip {status}"' in text
    assert "<h2>Matrix</h2>" in text and "major bump required" in text and "Coverage: 81.5%" in text
    assert "To fix:" in text and "<h2>Other</h2><ul>\n</ul>" not in text


def test_html_escapes_everything():
    cell = make_cell()
    report = build_report([make_test_result(cell.id, [make_test("t.py::x<b>", "failed", tail="</pre><script>alert(1)</script>")])], make_plan([cell]))
    text = render(report, "html")
    assert "<script>alert" not in text and "&lt;script&gt;" in text


def test_text_rendering_uses_plain_words(mixed):
    text = render(mixed[0], "text")
    assert text.startswith("xcompat report: FAILURE")
    assert "MISSING" in text and "CRASH" in text
    assert "✅" not in text


def test_unknown_format_is_a_usage_error(mixed):
    from xcompat.errors import UsageError

    with pytest.raises(UsageError, match="unknown report format"):
        render(mixed[0], "pdf")


def test_junit_prefixes_classnames_with_the_cell_and_fails_missing_cells(mixed):
    report, results = mixed
    root = ET.fromstring(junit_xml(report, results))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {c.id for c in report.cells}
    for suite in suites.values():
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("errors")) == sum(1 for c in cases if c.find("error") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
        for case in cases:
            assert case.get("classname").startswith(suite.get("name"))
            float(case.get("time"))
    missing = next(c for c in report.cells if c.status == "missing")
    assert suites[missing.id].find("testcase/failure").get("type") == "missing"
    crashed = next(c for c in report.cells if c.status == "crashed")
    error = suites[crashed.id].find("testcase/error")
    assert error.get("type") == "crashed" and "Segmentation fault" in error.text
    assert sum(int(s.get("tests")) for s in suites.values()) == int(root.get("tests"))
    names = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert len(names) == len(set(names))  # GitLab drops duplicate names


def test_junit_survives_control_characters():
    cell = make_cell()
    result = make_test_result(cell.id, [make_test("t.py::x", "failed", message="bad\x00byte", tail="\x1b[31mred\x07")])
    report = build_report([result], make_plan([cell]))
    root = ET.fromstring(junit_xml(report, [parse_result(result, "r")]))
    assert root.find(".//failure") is not None


def test_codequality_validates_and_deduplicates():
    results = [
        abi_result([("symbol-removed", "_ext.so", "_Z3foov", "major"), ("symbol-added", "_ext.so", "_Z3barv", "minor")], cid="py3.12-linux-x86_64-cpu"),
        abi_result([("symbol-removed", "_ext.so", "_Z3foov", "major")], cid="py3.13-linux-x86_64-cpu"),
    ]
    issues = codequality(build_report(results))
    validate("codequality", issues)
    assert len(issues) == 2
    assert {i["severity"] for i in issues} == {"critical", "minor"}
    assert len({i["fingerprint"] for i in issues}) == 2


def test_codequality_schema_rejects_gitlab_invalid_issues():
    from xcompat.errors import InputError

    bad = [{"description": "x", "check_name": "xcompat-abi/x", "fingerprint": "0" * 64, "severity": "high", "location": {"path": "a", "lines": {"begin": 1}}}]
    with pytest.raises(InputError, match="severity"):
        validate("codequality", bad)
    bad[0]["severity"] = "major"
    del bad[0]["location"]["lines"]
    with pytest.raises(InputError):
        validate("codequality", bad)


def test_codequality_is_empty_without_abi():
    assert codequality(build_report([stage_result("build", "py3.12-linux-x86_64-cpu")])) == []
