"""Every ABI finding kind the rules know has a readable title in reports."""

from __future__ import annotations

from xcompat.abi.rules import default_rules
from xcompat.report.display import ABI_TITLES, abi_title


def test_every_finding_kind_has_a_title():
    missing = sorted(set(default_rules()) - set(ABI_TITLES))
    assert not missing, f"finding kinds without a title in report/display.py: {missing}"


def test_titles_of_the_loader_floor_and_runtime_kinds():
    assert abi_title("symbol_versioning_added") == "Symbol versioning introduced"
    assert abi_title("symbol_versioning_removed") == "Symbol versioning dropped"
    assert abi_title("floor_raised_within_tag") == "Floors raised within the wheel tag's promise"
    assert abi_title("python_api_unverified") == "Python API changes not verified at run time"
    # an unknown kind still reads as words, not as an identifier
    assert abi_title("some_future_kind") == "Some future kind"
