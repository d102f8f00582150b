"""Optional deep tier: libabigail's ``abidiff`` on two libraries that carry DWARF.

Release builds have no debug info, so the default tier is symbol-level (names, versions,
``st_size``). When both sides have ``.debug_info`` and ``abidiff`` is installed, its
type-level verdict (struct layout, parameter and return types, enumerators, vtable slots)
is folded in as one finding. Its exit status is a bit field: 1 error, 2 usage error,
4 ABI change (review), 8 incompatible ABI change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2
ABIDIFF_ABI_CHANGE = 4
ABIDIFF_ABI_INCOMPATIBLE_CHANGE = 8
TIMEOUT_S = 300


def decode_exit(code: int) -> str:
    """``"error"``, ``"incompatible"``, ``"changed"`` or ``"same"`` for an abidiff exit status."""
    if code & (ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR):
        return "error"
    if code & ABIDIFF_ABI_INCOMPATIBLE_CHANGE:
        return "incompatible"
    if code & ABIDIFF_ABI_CHANGE:
        return "changed"
    return "same"


REPORT_LINES = 40


def _fold_report(text: str) -> str:
    """abidiff's text report, kept as lines (indentation included), cut at ``REPORT_LINES``."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if len(lines) > REPORT_LINES:
        lines = [*lines[:REPORT_LINES], f"... {len(lines) - REPORT_LINES} more line(s): run abidiff for the full report"]
    return "\n" + "\n".join(lines) if lines else ""


def run_abidiff(old: Path, new: Path, add: Callable[..., None], unchecked: list[str], *, old_debug: bool,
                new_debug: bool) -> None:
    """Run abidiff when it can say more than the symbol tier; report why not otherwise."""
    if not (old_debug and new_debug):
        unchecked.append(
            "type-level changes (struct layout, parameter/return types, enumerators, vtable slot order) "
            "were not checked: no DWARF debug info on both sides (build with -g to enable the abidiff tier)"
        )
        return
    import shutil  # here: most diffs have no debug info and never start abidiff
    import subprocess

    tool = shutil.which("abidiff")
    if tool is None:
        unchecked.append("type-level changes were not checked: both sides have debug info but abidiff "
                         "(libabigail) is not installed")
        return
    try:
        proc = subprocess.run([tool, "--no-added-syms", str(old), str(new)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        unchecked.append(f"abidiff did not finish within {TIMEOUT_S} s; type-level changes not checked")
        return
    verdict = decode_exit(proc.returncode)
    report = _fold_report(proc.stdout)
    if verdict == "error":
        unchecked.append(f"abidiff failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    elif verdict == "incompatible":
        add("abidiff_incompatible", Path(new).name, None, f"abidiff: incompatible ABI change: {report}")
    elif verdict == "changed":
        add("abidiff_changed", Path(new).name, None, f"abidiff: ABI change to review: {report}")
