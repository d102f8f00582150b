import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers.report import huge_report, make_cell, make_plan, make_test, make_test_result

from xcompat.errors import InputError
from xcompat.report import build_report, render
from xcompat.report.budget import Section, fit_sections
from xcompat.report.channels import load_limits, measure, parse_limits

CHANNELS = ["check_run_summary", "check_run_text", "pr_comment", "job_summary", "gitlab_note"]


def tables_are_whole(text):
    """Every Markdown table has a header, a delimiter row and rows with the same number of cells."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and re.fullmatch(r"\|(---\|)+", lines[i + 1]):
            cols = len(re.findall(r"(?<!\\)\|", lines[i])) - 1
            j = i + 2
            while j < len(lines) and lines[j].startswith("| "):
                assert len(re.findall(r"(?<!\\)\|", lines[j])) - 1 == cols, lines[j]
                j += 1
            i = j
        else:
            assert not lines[i].startswith("|---"), "delimiter row without a header"
            i += 1
    return True


@pytest.fixture(scope="module")
def big():
    return huge_report()


def test_full_rendering_of_the_big_report_exceeds_every_small_channel(big):
    full = render(big, "markdown")
    assert measure(full, "chars") > 65536  # otherwise the budget tests below prove nothing


@pytest.mark.parametrize("channel", CHANNELS)
def test_every_channel_fits_and_keeps_tables_whole(big, channel):
    limit = load_limits().channel(channel)
    text = render(big, "markdown", channel)
    assert limit.measure(text) <= limit.limit
    assert tables_are_whole(text)
    assert text.count("<details") == text.count("</details>")
    assert text.count("```") % 2 == 0
    # The verdict and the full-report link always survive.
    assert text.startswith("## ❌")
    assert "https://ci.example/run/1" in text


def test_folding_prefers_less_important_sections(big):
    from xcompat.report.markdown import sections

    fitted = fit_sections(sections(big), load_limits().channel("pr_comment"))
    assert fitted.levels["grid"] == 0 and "### Matrix" in fitted.text  # the grid is kept whole
    assert fitted.folded  # something had to give
    assert "more failures in the [full report](https://ci.example/run/1)" in fitted.text


def test_emoji_count_as_two_utf16_units():
    assert measure("🚀", "chars") == 2
    assert measure("é", "chars") == 1
    assert measure("é", "bytes") == 2


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=1, max_value=20_000), n_fail=st.integers(min_value=0, max_value=60), unit=st.sampled_from(["chars", "bytes"]))
def test_fit_never_exceeds_any_limit(limit, n_fail, unit):
    cell = make_cell()
    tests = [make_test(f"t.py::test_{i}", "failed", tail="x\n" * 50) for i in range(n_fail)]
    report = build_report([make_test_result(cell.id, tests)], make_plan([cell, make_cell("3.13")]))
    from xcompat.report.markdown import sections

    fitted = fit_sections(sections(report), limit, unit=unit, overflow_note="cut")
    assert measure(fitted.text, unit) <= limit


def test_fit_without_limit_keeps_everything():
    sections = [Section(key="a", priority=0, renditions=("A",)), Section(key="b", priority=1, renditions=("B" * 100, "b"))]
    assert fit_sections(sections, None).text == "A\n\n" + "B" * 100 + "\n"
    fitted = fit_sections(sections, 10)
    assert fitted.text == "A\n\nb\n" and fitted.folded == ("b",)


def test_section_needs_a_rendition():
    with pytest.raises(ValueError):
        Section(key="x", priority=1, renditions=())


def test_limits_file_is_valid_and_matches_the_services():
    limits = load_limits()
    assert limits.channel("check_run_summary").limit == 65535
    assert limits.channel("pr_comment").limit == 65536
    assert limits.channel("job_summary").limit == 1024 * 1024 and limits.channel("job_summary").unit == "bytes"
    assert limits.channel("gitlab_note").limit == 1_000_000
    assert limits.annotations.per_request == 50
    with pytest.raises(InputError, match="unknown report channel"):
        limits.channel("pr_coment")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d["channels"]["pr_comment"].update(limit=-1), "channels.pr_comment.limit"),
        (lambda d: d["channels"]["pr_comment"].update(unit="lines"), "channels.pr_comment.unit"),
        (lambda d: d["annotations"].pop("per_request"), "annotations.per_request"),
        (lambda d: d.update(channels=[]), "channels"),
        (lambda d: d.update(log_tail_lines="40"), "log_tail_lines"),
    ],
)
def test_malformed_limits_are_rejected_with_the_key(mutate, message):
    from xcompat.report.channels import _DATA

    doc = json.loads(_DATA.read_text())
    mutate(doc)
    with pytest.raises(InputError, match=re.escape(message)):
        parse_limits(doc)


def test_text_and_custom_budgets():
    report = huge_report(n_cells=4, n_fail=40)
    assert len(render(report, "text", 3000)) <= 3000
    assert len(render(report, "markdown", 5000)) <= 5000
    from xcompat.errors import UsageError

    with pytest.raises(UsageError):
        render(report, "json", "pr_comment")
    with pytest.raises(UsageError):
        render(report, "markdown", -5)
