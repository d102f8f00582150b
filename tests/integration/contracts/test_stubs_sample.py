"""stubs with the real stubtest on the bundled sample: v1's stubs match its runtime; v2's
_core.pyi declares random_seed, which its C module never binds, and that is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.cli import main
from xcompat.contracts.stubs import check_stubs
from xcompat.jsonio import read_json, validate

MISSING = "sample_ext._core.random_seed"


def test_v1_is_clean(sample_site: dict[str, Path]) -> None:
    doc = check_stubs(sample_site["v1"])
    validate("contracts-stubs", doc)
    assert doc["status"] == "passed", doc["findings"]
    assert doc["modules"] == ["sample_ext._core", "sample_ext._core_abi3"]
    assert doc["typed_packages"] == ["sample_ext"]


def test_v2_mismatch_is_caught_from_the_wheel(sample_wheels: dict[str, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stubs.json"
    assert main(["contracts", "stubs", str(sample_wheels["v2"]), "-o", str(out)]) == 0
    doc = read_json(out, schema="contracts-stubs")
    assert [(f["code"], f["object"]) for f in doc["findings"]] == [("missing-at-runtime", MISSING)]
    assert main(["contracts", "stubs", str(sample_wheels["v2"]), "--gate"]) == 1
    capsys.readouterr()


def test_allowlist_silences_and_flags_stale_entries(sample_site: dict[str, Path], tmp_path: Path) -> None:
    allow = tmp_path / "stubtest-allowlist.txt"
    allow.write_text("# bound in the next release\nsample_ext\\._core\\.random_seed\n")
    assert check_stubs(sample_site["v2"], allowlist=allow)["status"] == "passed"
    stale = check_stubs(sample_site["v1"], allowlist=allow)
    assert [f["code"] for f in stale["findings"]] == ["unused-allowlist-entry"]
    allow.write_text("(((\n")
    assert main(["contracts", "stubs", str(sample_site["v2"]), "--allowlist", str(allow)]) == 2


def test_one_case_reported_once_by_the_stage_it_belongs_to(sample_wheels: dict[str, Path],
                                                           sample_site: dict[str, Path]) -> None:
    """random_seed is new in v2's stub (old != new) and absent from v2's runtime (stub != runtime).
    It is a stub that lies about its own release: the stubs check reports it, and the ABI stage's
    Python-API diff, which compares what the releases import, does not."""
    from xcompat.abi import diff_paths

    stubs = check_stubs(sample_site["v2"])
    assert [f["object"] for f in stubs["findings"]] == [MISSING]
    abi = diff_paths(sample_wheels["v1"], sample_wheels["v2"], torch_ops="off").to_dict()
    python_level = [f for f in abi["findings"] if str(f.get("kind")).startswith("python_")]
    assert not [f for f in python_level if "random_seed" in str(f)], python_level
    # the C function behind it (sample_random_seed, added to the C API) is a binary change
    # between the releases: that one is the ABI stage's, and the stubs check never sees symbols
    assert any(f.get("kind") == "symbol_added" and f.get("symbol") == "sample_random_seed" for f in abi["findings"])
    # what changed between the releases stays the ABI stage's: checksum64 is added there, and the
    # stubs check says nothing about it (v2's stub and runtime agree)
    assert any(f.get("kind") == "python_api_added" and "checksum64" in str(f) for f in python_level)
    assert not any("checksum64" in f["object"] for f in stubs["findings"])
