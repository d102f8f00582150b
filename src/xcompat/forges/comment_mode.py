"""When the PR comment / MR note is posted: ``always``, ``on-failure``, ``on-change`` or ``off``.

* ``always`` (default): create the comment, or update it in place;
* ``on-failure``: create it only when the report is red; an existing comment is still
  updated when the report turns green, so a stale red comment never stays behind;
* ``on-change``: skip the update when the results are the same as in the comment (a
  digest of the verdict, every cell's status, the failures, the ABI bump and coverage is
  hidden in the comment);
* ``off``: never post (the job summary, check run and bundle still carry the report).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Literal

from xcompat.errors import UsageError
from xcompat.report.model import Report

CommentMode = Literal["always", "on-failure", "on-change", "off"]
COMMENT_MODES: tuple[CommentMode, ...] = ("always", "on-failure", "on-change", "off")
DIGEST = re.compile(r"<!-- xcompat-digest sha256=([0-9a-f]{64}) -->")


def parse_mode(value: str) -> CommentMode:
    if value not in COMMENT_MODES:
        raise UsageError(f"unknown comment mode {value!r}", hint="choose one of " + ", ".join(COMMENT_MODES))
    return value


def digest(report: Report) -> str:
    """What a reader would see change: not the wording, not timings, not the run link."""
    doc = {
        "conclusion": report.conclusion,
        "cells": sorted((c.id, c.status, c.tests_passed, c.tests_failed) for c in report.cells),
        "failures": sorted((f.cell_id or "", f.kind, f.name, f.outcome) for f in report.failures),
        "abi": None
        if report.abi is None
        else (report.abi.required_bump, report.abi.status, len(report.abi.findings)),
        "coverage": None
        if report.coverage is None
        else (
            None if report.coverage.percent is None else round(report.coverage.percent, 1),
            None if report.coverage.diff_percent is None else round(report.coverage.diff_percent, 1),
        ),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def digest_line(report: Report) -> str:
    return f"<!-- xcompat-digest sha256={digest(report)} -->"


def digest_of(body: str) -> str | None:
    found = DIGEST.search(body)
    return found.group(1) if found else None


@dataclass(frozen=True, kw_only=True)
class CommentDecision:
    post: bool  # create or update
    reason: str  # why not, when ``post`` is False


def decide(mode: CommentMode, report: Report, existing_body: str | None) -> CommentDecision:
    """Whether to create/update the comment, given the existing one's body (None: there is none)."""
    if mode == "off":
        return CommentDecision(post=False, reason="comment mode is off")
    if mode == "on-failure" and report.conclusion != "failure" and existing_body is None:
        return CommentDecision(post=False, reason="the report is not red and the comment mode is on-failure")
    if mode == "on-change" and existing_body is not None and digest_of(existing_body) == digest(report):
        return CommentDecision(
            post=False, reason="the results are the same as in the existing comment (on-change)"
        )
    return CommentDecision(post=True, reason="")
