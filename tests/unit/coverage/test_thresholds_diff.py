from __future__ import annotations

import pytest
from tests.helpers.coverage import git

from xcompat.coverage.diff import changed_lines
from xcompat.coverage.thresholds import (
    Thresholds,
    evaluate,
    parse_coverage_settings,
    raw_coverage_settings,
    resolve_thresholds,
    thresholds_from_matrix,
)
from xcompat.errors import InputError, UsageError


def test_options_win_over_matrix(tmp_path):
    matrix = tmp_path / "m.yml"
    matrix.write_text("coverage:\n  overall: 70\n  diff: 90\n")
    raw = thresholds_from_matrix_raw(matrix)
    assert raw == {"overall": 70.0, "diff": 90.0}
    t = resolve_thresholds(60.0, None, None)
    assert (t.overall, t.diff, t.source) == (60.0, None, "options")


def thresholds_from_matrix_raw(path):
    return parse_coverage_settings(raw_coverage_settings(path), path)


@pytest.mark.parametrize("body", ["coverage:\n  overall: 170\n", "coverage:\n  diff: yes\n", "coverage: [\n"])
def test_bad_matrix_thresholds(tmp_path, body):
    matrix = tmp_path / "m.yml"
    matrix.write_text(body)
    with pytest.raises(InputError):
        thresholds_from_matrix_raw(matrix)


def test_bad_option_threshold():
    with pytest.raises(UsageError):
        resolve_thresholds(101.0, None, None)


def test_evaluate_reasons():
    t = Thresholds(overall=80.0, diff=50.0)
    overall, diff = evaluate(t, 79.99, None, diff_known=True)
    assert not overall.passed and "79.99% < threshold 80%" in overall.reason
    assert diff.passed and "no executable lines" in diff.reason
    (_, diff) = evaluate(t, 90.0, None, diff_known=False)
    assert diff.passed and diff.actual is None and "no --base-ref" in diff.reason
    (overall, _) = evaluate(t, None, 10.0, diff_known=True)
    assert not overall.passed and "no executable lines were measured" in overall.reason


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "sub" / "pkg").mkdir(parents=True)
    (root / "sub" / "pkg" / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    (root / "top.py").write_text("x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "sub" / "pkg" / "m.py").write_text("a = 1\nb = 20\nc = 3\nd = 4\n")
    (root / "top.py").write_text("x = 2\n")
    git(root, "commit", "-qam", "change")
    return root


def test_changed_lines_relative_to_source_root(repo):
    changed = changed_lines(repo / "sub", "main")
    assert changed.files == {"pkg/m.py": (2, 4)}
    assert changed_lines(repo, "main").files == {"sub/pkg/m.py": (2, 4), "top.py": (1,)}


def test_uncommitted_changes_count_unless_committed_only(repo):
    (repo / "top.py").write_text("x = 2\ny = 3\n")
    assert changed_lines(repo, "main").files["top.py"] == (1, 2)
    assert changed_lines(repo, "main", include_uncommitted=False).files["top.py"] == (1,)


def test_unknown_base_ref_is_input_error(repo):
    with pytest.raises(InputError) as info:
        changed_lines(repo, "no-such-branch")
    assert "git diff failed" in info.value.message


def test_not_a_checkout(tmp_path):
    with pytest.raises(InputError):
        changed_lines(tmp_path, "main")


def test_thresholds_through_the_matrix_loader():
    from xcompat.resources import data_dir

    matrix = data_dir("examples") / "sample-ext" / ".xcompat" / "matrix.yml"
    if not matrix.is_file():
        pytest.skip(f"{matrix} is not there")
    found = thresholds_from_matrix(matrix)
    assert set(found) <= {"overall", "diff"}
    assert all(0 <= v <= 100 for v in found.values())
    t = resolve_thresholds(None, 12.5, matrix)
    assert t.diff == 12.5 and t.overall == found.get("overall")
