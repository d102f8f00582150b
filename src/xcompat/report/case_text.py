"""The text a report shows for a failure: log tails without terminal colour codes, bounded in
lines and characters, a crash's user frames first, and where a failing test is."""

from __future__ import annotations

import re

from xcompat.report.channels import load_limits
from xcompat.results import kinds as K
from xcompat.results.stage_result import StageResult

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def log_tail(text: str, *, lines: int | None = None, chars: int | None = None) -> str:
    """Last lines of a log, without terminal colour codes, bounded in lines and characters."""
    limits = load_limits()
    lines = lines or limits.log_tail_lines
    chars = chars or limits.log_tail_chars
    clean = _ANSI.sub("", text).replace("\r\n", "\n").rstrip()
    kept = clean.split("\n")[-lines:]
    out = "\n".join(kept)
    if len(out) > chars:
        out = out[-chars:]
        out = out[out.find("\n") + 1 :] if "\n" in out else out
    return out


def result_tail(result: StageResult) -> str:
    """``log_tail`` of a build error or of an envelope ``xcompat run`` wrote for a stage."""
    value = result.data.get("log_tail")
    if isinstance(value, str) and value.strip():
        return log_tail(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return log_tail("\n".join(value))
    return ""


def case_location(case: K.TestCase) -> tuple[str | None, int | None]:
    """The test's file from its node id, and the line pytest reported for it in that file."""
    file = case.nodeid.split("::", 1)[0] if "::" in case.nodeid else None
    line = None
    if file:
        m = re.search(re.escape(file) + r":(\d+):", case.longrepr or case.output_tail)
        line = int(m.group(1)) if m else None
    return file, line


def case_tail(case: K.TestCase) -> str:
    if case.crash_traceback.strip():
        # The user's frames first (a plain tail keeps pytest's frames and cuts the test's), then the output.
        from xcompat.report.tails import crash_tail

        limits = load_limits()
        return crash_tail(case.crash_traceback, case.output_tail, lines=limits.log_tail_lines, chars=limits.log_tail_chars)
    for text in (case.output_tail, case.longrepr):
        if text.strip():
            return log_tail(text)
    return ""
