"""Text that a pull request controls, made inert for each channel it is shown in.

Test ids, messages, log tails, file names and cell ids come from results, plans and test
suites, and a pull request writes all of them (a conftest can give a test any node id). Each
channel that shows them has one function here, and every renderer uses it:

* ``markdown_text`` / ``markdown_code`` / ``html_code``: Markdown prose, code spans and
  ``<code>`` in Markdown (PR comment, check-run summary and text, job summary, GitLab note):
  whitespace collapsed to one line, ``@name`` and references (``#1``, GitLab's ``!1 ~x %x
  $1 &1``) made inert with a word joiner, no link, image or HTML can open, bare URLs do not
  autolink;
* ``gitlab_note``: a last pass over a whole GitLab note: no line can start a quick action;
* ``html_text``: the self-contained HTML report;
* ``log_text``: terminal and CI logs: control characters (ANSI escapes included) shown as
  ``\\xNN``, and no line can start with ``::`` (a GitHub workflow command) or GitLab's
  section markers.

Every field is capped (``cap``) before a channel's size budget is applied, so one long test id
cannot push the rest of a report out.
"""

from __future__ import annotations

import html
import re

# The longest a single field from a result is shown; the budget then fits whole sections.
FIELD_CHARS = 400
# Messages and details are longer by nature; still far below any channel's budget.
MESSAGE_CHARS = 2000

# U+2060 WORD JOINER: invisible, and it breaks the tokens that notify or link.
_WJ = "\u2060"
# "@name" mentions, "#1" issues, and GitLab's "!1" merge requests, "~label", "%milestone",
# "$1" snippets, "&1" epics: made inert wherever a word character follows the sigil.
_REFERENCE = re.compile(r"([@#!~%$&])(?=[\w\"'])")
# GFM's extended autolinks: scheme:// and www. (an "@" is handled above, so no e-mail links).
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp)(:)|\b(www)(\.)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def cap(text: object, limit: int = FIELD_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis and the count left out."""
    s = str(text)
    if len(s) <= limit:
        return s
    keep = max(limit - 24, 1)
    return f"{s[:keep]}… ({len(s) - keep} more characters)"


def one_line(text: object, limit: int = FIELD_CHARS) -> str:
    """Whitespace (newlines included) collapsed to single spaces, then capped."""
    return " ".join(cap(text, limit).split())


def _inert(s: str) -> str:
    s = _REFERENCE.sub(lambda m: m.group(1) + _WJ, s)
    return _AUTOLINK.sub(lambda m: f"{m.group(1) or m.group(3)}{_WJ}{m.group(2) or m.group(4)}", s)


def markdown_text(text: object, limit: int = FIELD_CHARS) -> str:
    """Prose or a table cell: one line, no Markdown or HTML of its own, nothing that notifies or links."""
    s = _inert(one_line(text, limit))
    s = s.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "|`*_[]!":
        s = s.replace(ch, "\\" + ch)
    return s


def markdown_code(text: object, limit: int = FIELD_CHARS) -> str:
    """An inline code span that survives backticks in the text; nothing inside a span renders."""
    s = one_line(text, limit)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    # GFM splits table cells on "|" even inside code spans; "\\|" is read as a literal pipe there.
    s = s.replace("|", "\\|")
    return f"{fence}{pad}{s}{pad}{fence}" if s else ""


_HTML_CODE = str.maketrans(
    {
        "|": "&#124;",
        "_": "&#95;",
        "*": "&#42;",
        "[": "&#91;",
        "]": "&#93;",
        "\\": "&#92;",
        "~": "&#126;",
        "`": "&#96;",
        "$": "&#36;",
        "!": "&#33;",
    }
)


def html_code(text: object, limit: int = FIELD_CHARS) -> str:
    """``<code>`` for Markdown's inline HTML (a ``<summary>``, prose): its text is still parsed as
    Markdown there, so it is escaped as HTML and as Markdown, and defused like prose."""
    s = _inert(one_line(text, limit))
    s = html.escape(s, quote=True).translate(_HTML_CODE)
    return f"<code>{s}</code>" if s else ""


def html_inline(text: object, limit: int = FIELD_CHARS) -> str:
    """Plain text inside Markdown's inline HTML (``<summary>``, ``<sub>``): as ``html_code``, unwrapped."""
    s = _inert(one_line(text, limit))
    return html.escape(s, quote=True).translate(_HTML_CODE)


# GitLab runs a quick action on any line of a note that starts with "/" (outside code blocks,
# by its own extractor; a zero-width space in front keeps every line out of reach regardless).
_QUICK_ACTION = re.compile(r"^(\s*)/", re.MULTILINE)


def gitlab_note(markdown: str) -> str:
    """A whole MR note with no line able to start a quick action."""
    return _QUICK_ACTION.sub(lambda m: m.group(1) + "\u200b/", markdown)


def html_text(text: object, limit: int = MESSAGE_CHARS) -> str:
    """Text for the HTML report (no Markdown there: escaping as HTML is the whole job), capped."""
    return html.escape(cap(text, limit), quote=True)


def _show_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# A line that GitHub's runner reads as a workflow command starts with "::" once leading
# whitespace is trimmed; GitLab's collapsible sections start with an escape, shown as text here.
_COMMAND_LINE = re.compile(r"^(\s*)::", re.MULTILINE)


def log_text(text: object) -> str:
    """Text for a log line: control characters shown as ``\\xNN`` (tabs and newlines kept), no
    line starting a workflow command."""
    s = str(text).replace("\r\n", "\n").replace("\r", "\\r")
    s = _CONTROL.sub(_show_control, s)
    return _COMMAND_LINE.sub(lambda m: m.group(1) + "\u200b::", s)


__all__ = [
    "FIELD_CHARS",
    "MESSAGE_CHARS",
    "cap",
    "gitlab_note",
    "html_code",
    "html_inline",
    "html_text",
    "log_text",
    "markdown_code",
    "markdown_text",
    "one_line",
]
