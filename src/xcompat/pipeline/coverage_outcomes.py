"""The coverage stage's two test runs compared: a test whose outcome under coverage differs
from the test stage's is named as a warning (the verdict on the tests is the test stage's), and
a run whose every file failed to collect leaves nothing worth measuring."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# How many tests with a different outcome under coverage a warning names one by one.
NAMED_DIFFERENCES = 20


def _records(document: Any) -> list[Mapping[str, Any]]:
    tests = document.get("tests") if isinstance(document, Mapping) else None
    return [t for t in tests if isinstance(t, Mapping)] if isinstance(tests, list) else []


def collection_failure(document: Any) -> str | None:
    """The first file that could not be collected, as ``FILE: why``, when that left no test to
    run (pytest then runs none, unless told to continue); else None."""
    failed = [t for t in _records(document)
              if t.get("outcome") == "error" and str(t.get("message", "")).startswith("collection failed")]
    if not failed or len(failed) < len(_records(document)):
        return None
    first = failed[0]
    return f"{first.get('nodeid')}: {first.get('message')}"


def anchors_of(targets: Iterable[str]) -> tuple[str, ...]:
    """The top-level package of each ``--pyargs`` target: node ids are compared from there on."""
    return tuple(dict.fromkeys(t.split(".")[0] + "/" for t in targets))


def _test_key(nodeid: str, anchors: Iterable[str]) -> str:
    """A node id as both stages see it. With ``--pyargs`` the test stage imports the tests from
    the installed wheel and this stage from the instrumented copy, so the path before the
    package differs (``.site/pkg/tests/...`` and ``src/pkg/tests/...``)."""
    path, sep, rest = nodeid.partition("::")
    for anchor in anchors:
        at = ("/" + path).find("/" + anchor)
        if at >= 0:
            path = path[at:]
            break
    return path + sep + rest


def _outcomes(document: Any, anchors: Iterable[str]) -> dict[str, str]:
    return {_test_key(str(t.get("nodeid")), anchors): str(t.get("outcome"))
            for t in _records(document) if isinstance(t.get("nodeid"), str)}


def outcome_differences(test_stage: Any, under_coverage: Any, *, anchors: Iterable[str] = ()) -> list[str]:
    """Warnings naming each test whose outcome under coverage differs from the test stage's
    (first ``NAMED_DIFFERENCES`` by name, then a count)."""
    from xcompat.results.kinds import PASSING_OUTCOMES

    before = _outcomes(test_stage, anchors)
    after = _outcomes(under_coverage, anchors)
    if not before:
        return []
    differ = []
    for key in sorted(before.keys() & after.keys()):
        was, now = before[key], after[key]
        if was == now or (was in PASSING_OUTCOMES and now in PASSING_OUTCOMES):
            continue
        differ.append(f"{key}: {was} in the test stage, {now} under coverage (the verdict is the test stage's)")
    for key in sorted(after.keys() - before.keys()):
        if after[key] not in PASSING_OUTCOMES and after[key] != "skipped":
            differ.append(f"{key}: {after[key]} under coverage, and not in the test stage's results")
    if len(differ) > NAMED_DIFFERENCES:
        rest = len(differ) - NAMED_DIFFERENCES
        differ = differ[:NAMED_DIFFERENCES] + [f"and {rest} more test(s) with another outcome under coverage"]
    return differ
