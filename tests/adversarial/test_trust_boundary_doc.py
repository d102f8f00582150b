"""docs/trust-boundary.md names, for each guarantee, tests that exist: a renamed or deleted test
breaks this, so the document cannot keep pointing at proof that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "trust-boundary.md"


def _defined_tests() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        found.setdefault(path.name, set()).update(re.findall(r"^def (test_\w+)", path.read_text(), re.M))
    return found


def test_every_guarantee_names_tests_that_exist() -> None:
    text = DOC.read_text()
    section = text[text.index("## Guarantees and the tests that prove them"):]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Guarantee")]
    assert len(rows) >= 15
    defined = _defined_tests()
    everything = set().union(*defined.values())
    for row in rows:
        files = set(re.findall(r"(test_\w+\.py)", row))
        names = set(re.findall(r"(?<![\w/.])(test_\w+)\b(?!\.py)", row))
        assert files, f"a guarantee without a test file: {row[:80]}"
        for name in files:
            assert name in defined, f"{name} does not exist (docs/trust-boundary.md)"
        for name in names:
            assert name in everything, f"{name} is not a test function (docs/trust-boundary.md)"
