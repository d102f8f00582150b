"""Make failure tails point at the test: user frames of a crash first, the failing assertion.

A faulthandler dump from an isolated test lists ~40 frames of pytest, pluggy and
xcompat's own runner below the two that matter (the native call that crashed and the
test that made it). Cutting the last lines of such a dump keeps exactly the wrong ones.
``crash_tail`` keeps the frames of the user's code (and the library call they made),
says how many framework frames it hid, and appends the test's captured output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Frames of the test machinery, hidden from crash traces.
# xcompat's own runner is matched by its module paths, not by "/xcompat/": a project checked
# out into a folder of that name (as CI checkouts of this repository are) must keep its frames.
FRAMEWORK = re.compile(
    r"/(_pytest|pluggy)/|/bin/(pytest|xcompat)$|/runpy\.py$|/unittest/|^<frozen "
    r"|/xcompat/(isolate|testing|commands|pipeline)/|/xcompat/(cli|__main__)\.py$"
)
FRAME = re.compile(r'^\s*File "(?P<path>[^"\n]+)", line (?P<line>\d+) in (?P<func>\S.*?)\s*$')
THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+ .*\(most recent call first\):\s*$")
STDLIB = re.compile(r"/lib/python3\.\d+t?/(?!site-packages/|dist-packages/)")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOCATION = re.compile(r"^(?P<path>[^\s:][^:\n]*\.py):(?P<line>\d+): (?P<exc>\w[\w.]*)\s*$")


@dataclass(frozen=True, kw_only=True)
class Frame:
    path: str
    line: int
    func: str

    @property
    def framework(self) -> bool:
        path = self.path.replace("\\", "/")
        return bool(FRAMEWORK.search(path))

    @property
    def stdlib(self) -> bool:
        return bool(STDLIB.search(self.path.replace("\\", "/")))

    def where(self, root: str = "") -> str:
        path = self.path.replace("\\", "/")
        if root and path.startswith(root):
            path = path[len(root) :]
        return f"{path}:{self.line} in {self.func}"


def frames(text: str) -> list[Frame]:
    out = []
    for line in text.splitlines():
        m = FRAME.match(line)
        if m:
            out.append(Frame(path=m.group("path"), line=int(m.group("line")), func=m.group("func")))
    return out


def first_user_frame(text: str) -> Frame | None:
    """The innermost frame of the user's own code (not the test machinery, not the standard library)."""
    for frame in frames(text):
        if not frame.framework and not frame.stdlib and not frame.path.startswith("<"):
            return frame
    return None


def project_root(frame: Frame, test_file: str | None) -> str:
    """The folder the test file's path is relative to, found from a frame in that file ("" if none)."""
    path = frame.path.replace("\\", "/")
    if test_file and path.endswith("/" + test_file):
        return path[: -len(test_file)]
    return ""


def user_frames_first(text: str) -> str:
    """Rewrite each faulthandler thread block: the non-framework frames, then a count of the hidden ones."""
    lines = ANSI.sub("", text).replace("\r\n", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not FRAME.match(lines[i]):
            out.append(lines[i])
            if not THREAD.match(lines[i].strip()):
                i += 1
                continue
            i += 1
        # A thread's frames (or, in a tail cut above its header, a run of frames).
        block: list[tuple[str, Frame | None]] = []
        while i < len(lines) and (FRAME.match(lines[i]) or lines[i].strip().startswith("<no Python frame>")):
            m = FRAME.match(lines[i])
            block.append(
                (
                    lines[i],
                    Frame(path=m.group("path"), line=int(m.group("line")), func=m.group("func"))
                    if m
                    else None,
                )
            )
            i += 1
        kept = [line for line, frame in block if frame is None or not frame.framework]
        hidden = len(block) - len(kept)
        out.extend(kept)
        if hidden:
            cut = "" if kept else " (this tail was cut above the test's own frames)"
            out.append(f"  … {hidden} frame(s) of pytest, pluggy and xcompat hidden{cut}")
    return "\n".join(out)


def _bounded(text: str, lines: int, chars: int) -> str:
    kept = text.rstrip().split("\n")
    if len(kept) > lines:
        kept = kept[:lines] + [f"… {len(kept) - lines} more line(s)"]
    out = "\n".join(kept)
    if len(out) > chars:
        out = out[:chars].rsplit("\n", 1)[0] + "\n… (cut)"
    return out


def crash_tail(traceback: str, output: str = "", *, lines: int = 40, chars: int = 4000) -> str:
    """A crash's tail: the trace with the user's frames first, then the test's captured output.

    The trace keeps its head (where the crash is); the output keeps its end (what the
    test printed last). Both are bounded so the whole stays within ``lines`` and ``chars``.
    """
    trace = user_frames_first(traceback).strip()
    clean_output = ANSI.sub("", output).replace("\r\n", "\n").strip()
    if not clean_output:
        return _bounded(trace, lines, chars)
    out_lines = max(5, lines // 3)
    out_chars = max(500, chars // 3)
    tail = clean_output.split("\n")[-out_lines:]
    output_part = "\n".join(tail)[-out_chars:]
    trace_part = _bounded(trace, lines - len(tail) - 2, chars - len(output_part) - 40)
    return f"{trace_part}\n\n--- captured output ---\n{output_part}"


@dataclass(frozen=True, kw_only=True)
class Assertion:
    source: str  # the failing line of the test, as pytest marks it with ">"
    error: str  # the first "E" line
    location: str  # path:line


def failing_assertion(tail: str) -> Assertion | None:
    """The failing line and error from a pytest long representation, when the tail holds one."""
    source = error = location = ""
    for line in ANSI.sub("", tail).splitlines():
        stripped = line.strip()
        if line.startswith(">") and not source:
            source = stripped.lstrip(">").strip()
        elif line.startswith("E ") and not error:
            error = stripped[1:].strip()
        m = LOCATION.match(stripped)
        if m:
            location = f"{m.group('path')}:{m.group('line')}"
    if not (source or error):
        return None
    return Assertion(source=source, error=error, location=location)
