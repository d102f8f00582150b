"""Edge cases derived from a declared sample: which exist, what each does to the inputs, their names."""

from __future__ import annotations

import torch

from xcompat.operators.cases import derive


def _cases(sample, **kw):
    return {c.name: c for c in derive(sample, 1, **kw)}


def test_the_declared_sample_comes_first_and_every_dtype_follows() -> None:
    cases = list(derive((torch.randn(4, 3), torch.randn(4, 3), 0.5), 1))
    assert cases[0].name == "float32" and cases[0].plain
    plain = [c.name for c in cases if c.plain]
    assert plain == ["float32", "float16", "bfloat16", "float64"]
    half = next(c for c in cases if c.name == "float16")
    assert all(a.dtype == torch.float16 for a in half.args[:2]) and half.args[2] == 0.5


def test_layouts_keep_the_values_and_change_the_strides() -> None:
    x = torch.randn(2, 3, 4, 5)
    cases = _cases((x,))
    strided = cases["non-contiguous, float32"].args[0]
    assert not strided.is_contiguous() and torch.equal(strided, x)
    transposed = cases["transposed, float32"].args[0]
    assert not transposed.is_contiguous() and torch.equal(transposed, x)
    last = cases["channels-last, float32"].args[0]
    assert last.is_contiguous(memory_format=torch.channels_last) and torch.equal(last, x)


def test_channels_last_is_only_for_4d_and_size_one_tensors_get_no_layouts() -> None:
    assert not any("channels-last" in n for n in _cases((torch.randn(4, 3),)))
    names = _cases((torch.randn(1),))
    assert not any(n.startswith(("non-contiguous", "transposed")) for n in names)


def test_shapes_and_values_of_the_content_cases() -> None:
    cases = _cases((torch.randn(4, 3),))
    assert cases["float32, empty batch"].args[0].shape == (0, 3)
    assert cases["float32, zero-size inner dim"].args[0].shape == (4, 0)
    assert cases["float32, 0-dim"].args[0].dim() == 0
    special = cases["float32, NaN, Inf and -0.0"].args[0].reshape(-1)
    assert torch.isnan(special[0]) and special[1] == float("inf") and special[2] == float("-inf")
    assert special[3] == 0 and torch.signbit(special[3])
    assert not cases["float32, NaN, Inf and -0.0"].finite and cases["float32"].finite
    near = cases["float16, values near the float16 range"].args[0]
    assert float(near.abs().max()) == torch.finfo(torch.float16).max / 4


def test_names_combine_layout_dtype_and_content_and_several_samples_are_numbered() -> None:
    names = _cases((torch.randn(4, 3),), several=True)
    assert "non-contiguous, float16, empty batch (sample 1)" not in names  # an empty tensor has no strides
    assert "non-contiguous, float16, NaN, Inf and -0.0 (sample 1)" in names
    assert "transposed, bfloat16 (sample 1)" in names


def test_integer_tensors_keep_their_dtype_and_values() -> None:
    idx = torch.tensor([0, 2, 1])
    cases = list(derive((torch.randn(3), idx), 1))
    assert all(c.args[1].dtype == torch.int64 for c in cases)
    assert all(torch.equal(c.args[1], idx) for c in cases if "NaN" in c.name or "range" in c.name)


def test_a_sample_without_floating_tensors_gets_no_dtype_cases() -> None:
    cases = list(derive((torch.arange(6).reshape(2, 3),), 1))
    assert cases[0].name == "non-floating" and cases[0].dtype is None
    assert not any("float" in c.name.replace("non-floating", "") for c in cases)
