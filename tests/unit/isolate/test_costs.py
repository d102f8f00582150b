"""The bound on what isolation may cost, and how a measurement is written into the matrix."""

from __future__ import annotations

import pytest

from xcompat.commands.matrix_init import isolation_lines, starter_matrix
from xcompat.isolate.costs import Bound, Measurement, ModeCost, one_line
from xcompat.matrix import load_matrix
from xcompat.settings import resolve_settings


@pytest.mark.parametrize(("seconds", "plain", "tests", "within"), [
    (19.9, 10.0, 10, True),  # under 2x
    (20.1, 10.0, 10, False),  # over 2x and 1 s a test more
    (3.0, 1.0, 100, True),  # 3x, but 20 ms a test more
    (7.0, 1.0, 100, False),  # 7x and 60 ms a test more
])
def test_a_mode_is_within_the_bound_by_ratio_or_by_cost_per_test(seconds, plain, tests, within):
    bound = Bound(ratio=2.0, per_test_s=0.05)
    assert bound.allows(seconds, plain, tests) is within
    assert bound.allows(bound.limit(plain, tests), plain, tests)
    assert not bound.allows(bound.limit(plain, tests) + 0.01, plain, tests)


def _measurement(test_s: float | None, file_s: float | None, decision: str, *, over: bool = False,
                 sample_files: int = 1, files: int = 1) -> Measurement:
    return Measurement(plain_s=2.0, costs={"test": ModeCost("test", test_s, over=over), "file": ModeCost("file", file_s)},
                       tests=16, files=files, sample_tests=16 if sample_files == files else 4,
                       sample_files=sample_files, bound=Bound(), decision=decision)  # type: ignore[arg-type]


def test_the_comment_says_what_each_mode_cost_and_the_bound():
    lines = _measurement(10.0, 2.2, "file").comment_lines()
    assert lines == [
        "measured by `xcompat matrix init` on 16 tests in 1 file:",
        "plain pytest 2.0 s, --isolate test 10.0 s (5.0x, +500 ms a test), --isolate file 2.2 s (1.1x).",
        "Bound: 2x plain pytest's time or +50 ms a test; test is over it, file is within it.",
    ]
    stopped = _measurement(9.0, None, "file", over=True, sample_files=2, files=8).comment_lines()
    assert stopped[0] == ("measured by `xcompat matrix init` on 2 of 8 test files (4 of 16 tests), "
                          "scaled to the whole suite:")
    assert "--isolate test more than 9.0 s (more than 4.5x" in stopped[1]
    assert "--isolate file not measured in the time left" in stopped[1]
    assert stopped[2].endswith("test is over it, file was not measured in the time left.")
    assert _measurement(30.0, 20.0, "none").comment_lines()[2].endswith(
        "none runs the tests in one process, without isolation between them.")


@pytest.mark.parametrize("decision", ["test", "file", "none"])
def test_the_written_lines_are_a_valid_matrix_with_the_chosen_mode(tmp_path, decision):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    measured = _measurement(2.1, 2.0, decision)
    text = starter_matrix(project, "acme/p", isolation_lines(decision, measured.comment_lines()))
    assert resolve_settings(load_matrix(text.encode(), source="m.yml")).tests.isolation == decision
    why = one_line("pytest could not collect\n tests/x.py: \x1b[31mError\x1b[0m " + "y" * 300)
    assert "\n" not in why and "\x1b" not in why and len(why) <= 200 and why.endswith("...")
    text = starter_matrix(project, "acme/p", isolation_lines("test", why_default=why))
    assert resolve_settings(load_matrix(text.encode(), source="m.yml")).tests.isolation == "test"
    assert f"  isolation: test  # the default; not measured: {why}\n" in text
