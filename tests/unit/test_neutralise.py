"""One neutralising function per channel: what each leaves of text a pull request wrote."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from tests.helpers.cli import xcompat_in_process

from xcompat.neutralise import (
    FIELD_CHARS,
    cap,
    gitlab_note,
    html_code,
    log_text,
    markdown_code,
    markdown_text,
)


def test_cap_keeps_short_text_and_marks_what_it_cut() -> None:
    assert cap("short") == "short"
    long = "x" * 10_000
    capped = cap(long)
    assert len(capped) <= FIELD_CHARS and capped.endswith("more characters)")


@pytest.mark.parametrize("render", [markdown_text, html_code])
def test_prose_and_html_code_defuse_mentions_references_and_autolinks(render) -> None:  # type: ignore[no-untyped-def]
    # Entities are decoded first: what counts is the text a reader's browser ends up with.
    out = html.unescape(render("@octocat #12 !3 ~bug %v1 https://evil.example www.evil.example\n\nnext line"))
    assert "\n" not in out
    for token in ("@octocat", "#12", "!3", "~bug", "%v1", "https://", "www."):
        assert token not in out, token


def test_prose_opens_no_markdown_or_html() -> None:
    out = markdown_text("[Sign in](https://x) ![i](y) <b>x</b> | a `b` *c* _d_")
    assert "<b>" not in out and "](" not in out.replace("\\](", "")
    assert "|" not in out.replace("\\|", "")


def test_code_span_survives_backticks_and_stays_one_line() -> None:
    assert markdown_code("a ``b`` c\nd") == "```a ``b`` c d```"


def test_gitlab_note_lines_start_no_quick_action() -> None:
    note = gitlab_note("ok\n/approve\n  /merge\ntext /not-at-start")
    assert all(not line.lstrip().startswith("/") for line in note.splitlines())
    assert "text /not-at-start" in note


def test_log_text_shows_escapes_and_starts_no_workflow_command() -> None:
    out = log_text("a\x1b[31mred\r\n::add-mask::x\n  ::error::y\tz\x00")
    assert "\x1b" not in out and "\x00" not in out and "\\x1b" in out
    assert all(not line.lstrip().startswith("::") for line in out.splitlines())
    assert "\tz" in out


@pytest.mark.parametrize("cell_id", ["::add-mask::x", "a\nb", "../up", "x y", ""])
def test_a_plan_with_a_cell_id_outside_the_safe_set_is_refused_in_one_line(tmp_path: Path, cell_id: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "cells": [{"id": cell_id, "required": True}]}))
    (tmp_path / "results").mkdir()
    proc = xcompat_in_process("report", str(tmp_path / "results"), "--plan", str(plan), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2
    assert "plan.json" in proc.stderr and not any(line.startswith("::") for line in proc.stderr.splitlines())
