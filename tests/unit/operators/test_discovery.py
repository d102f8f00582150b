"""Discovery's pure parts: dispatch keys from the dispatcher's dump, top-level names of a site."""

from __future__ import annotations

from pathlib import Path

import torch

from xcompat.operators.discovery import dispatch_keys, top_level_names
from xcompat.operators.schema_inputs import schema_sample

_LIB = torch.library.Library("xcompat_unit_ops", "DEF")  # kept alive for the module's tests
_LIB.define("double(Tensor x, float s) -> Tensor")
_LIB.define("pick(Tensor x, int[] dims) -> Tensor")
_LIB.impl("double", lambda x, s: x * 2 * s, "CPU")
_LIB.impl("double", lambda x, s: torch.empty_like(x), "Meta")


def test_dispatch_keys_are_the_ones_with_a_kernel() -> None:
    assert dispatch_keys("xcompat_unit_ops::double") == ["CPU", "Meta"]
    assert dispatch_keys("xcompat_unit_ops::pick") == []


def test_inputs_come_from_a_schema_of_tensors_and_numbers_only() -> None:
    sample = schema_sample("xcompat_unit_ops::double", "")
    assert sample is not None and sample[0].shape == (4, 3) and sample[1] == 0.5
    assert schema_sample("xcompat_unit_ops::pick", "") is None


def test_top_level_names_come_from_the_dist_info_or_the_folder(tmp_path: Path) -> None:
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("pkg/__init__.py,,\npkg/_ops.so,,\nsolo.py,,\npkg-1.0.dist-info/RECORD,,\n")
    assert top_level_names(tmp_path) == ["pkg", "solo"]
    (info / "top_level.txt").write_text("other\n")
    assert top_level_names(tmp_path) == ["other"]
    plain = tmp_path / "plain"
    (plain / "mod").mkdir(parents=True)
    (plain / "mod" / "__init__.py").write_text("")
    assert top_level_names(plain) == ["mod"]


def test_without_dispatch_dump_each_known_key_is_asked(monkeypatch) -> None:
    monkeypatch.delattr(torch._C, "_dispatch_dump")
    assert dispatch_keys("xcompat_unit_ops::double") == ["CPU", "Meta"]
    monkeypatch.delattr(torch._C, "_dispatch_has_kernel_for_dispatch_key")
    assert dispatch_keys("xcompat_unit_ops::double") == []
