"""Edge-case strategies really produce the edge cases; the reference check catches wrong kernels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings

from xcompat.testing.reference import (
    DEFAULT_TOLERANCES,
    ReferenceMismatch,
    Tolerance,
    assert_matches_reference,
    assert_mixed_device_raises,
    load_tolerances,
    tolerances_from_mapping,
)
from xcompat.testing.strategies import apply_layout, dtypes, same_shape_tensors, special_values, tensors

FAST = settings(
    max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True
)


def test_tensors_cover_the_edge_cases() -> None:
    seen: dict[str, int] = dict.fromkeys(
        ("empty", "0-d", "size-1", "nan", "inf", "subnormal", "non-contiguous", "stride-0"), 0
    )
    dtypes_seen: set[torch.dtype] = set()

    @FAST
    @given(tensors())
    def collect(x: torch.Tensor) -> None:
        dtypes_seen.add(x.dtype)
        seen["empty"] += x.numel() == 0
        seen["0-d"] += x.dim() == 0
        seen["size-1"] += 1 in x.shape
        seen["non-contiguous"] += not x.is_contiguous()
        seen["stride-0"] += 0 in x.stride() and x.numel() > 1
        wide = x.double()
        seen["nan"] += bool(torch.isnan(wide).any())
        seen["inf"] += bool(torch.isinf(wide).any())
        finite = wide[torch.isfinite(wide) & (wide != 0)]
        seen["subnormal"] += bool((finite.abs() < torch.finfo(x.dtype).tiny).any())

    collect()
    assert all(count > 0 for count in seen.values()), seen
    assert dtypes_seen == {torch.float16, torch.bfloat16, torch.float32, torch.float64}


def test_same_shape_tensors_and_narrowed_values() -> None:
    @FAST
    @given(same_shape_tensors(3, dtypes=("float32",), allow_nan=False, allow_infinity=False))
    def check(triple: tuple[torch.Tensor, ...]) -> None:
        assert len({t.shape for t in triple}) == 1 and {t.dtype for t in triple} == {torch.float32}
        for t in triple:
            assert bool(torch.isfinite(t).all())

    check()


def test_integer_dtypes_and_layouts() -> None:
    @FAST
    @given(tensors(dtypes=("int32", "uint8"), layouts=("channels_last", "strided")))
    def check(x: torch.Tensor) -> None:
        assert x.dtype in (torch.int32, torch.uint8)

    check()
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    for layout in ("transposed", "strided", "channels_last"):
        y = apply_layout(x, layout)
        assert torch.equal(y, x) and not y.is_contiguous()
    with pytest.raises(ValueError, match="unknown layout"):
        apply_layout(x, "diagonal")
    with pytest.raises(ValueError, match="unknown dtype"):
        dtypes(["float8"])
    assert float("inf") in special_values("float16") and 255 in special_values("uint8")


def test_reference_accepts_a_correct_kernel_on_every_float_dtype() -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        a = torch.linspace(-100, 100, 257).to(dtype)
        b = torch.linspace(7, -7, 257).to(dtype).t()
        assert_matches_reference(lambda x, y: x * 0.5 + y, lambda x, y: x * 0.5 + y, a, b)
    # fp16 overflow to inf is the correctly rounded answer, not a mismatch.
    big = torch.tensor([60000.0, -60000.0, float("nan")], dtype=torch.float16)
    out = assert_matches_reference(lambda x: x + x, lambda x: x + x, big)
    assert torch.isinf(out[:2]).all()


def test_reference_catches_a_stride_bug() -> None:
    # Writes the contiguous result into a buffer laid out like a transposed input: the
    # bug torch.library.opcheck does not see.
    def buggy_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        out.view(-1).copy_((x.contiguous() + y.contiguous()).view(-1)) if out.is_contiguous() else out.copy_(
            (x.contiguous() + y.contiguous()).view(out.shape[::-1]).t()
        )
        return out

    a = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    b = torch.ones(4, 3)
    with pytest.raises(ReferenceMismatch) as err:
        assert_matches_reference(buggy_add, torch.add, a, b)
    text = str(err.value)
    assert (
        "float32: rtol=1.3e-06, atol=1e-05" in text and "elements differ" in text and "strides=(1, 4)" in text
    )


def test_reference_shape_dtype_and_output_count() -> None:
    a = torch.ones(3)
    with pytest.raises(ReferenceMismatch, match="shape"):
        assert_matches_reference(lambda x: x[:2], lambda x: x, a)
    with pytest.raises(ReferenceMismatch, match="output"):
        assert_matches_reference(lambda x: (x, x), lambda x: x, a)
    ints = torch.arange(5, dtype=torch.int32)
    with pytest.raises(ReferenceMismatch, match="dtype int32 != reference dtype int64"):
        assert_matches_reference(lambda x: x + 1, lambda x: x.to(torch.int64) + 1, ints)
    with pytest.raises(ReferenceMismatch, match="1 of 5 elements differ"):
        assert_matches_reference(lambda x: x + (x == 4).to(x.dtype), lambda x: x, ints)
    # Looser tolerance per call.
    assert_matches_reference(lambda x: x + 1e-3, lambda x: x, a, atol=1e-2)


def test_tolerance_tables_are_validated(tmp_path: Path) -> None:
    table = tolerances_from_mapping({"float16": {"rtol": 2e-3}})
    assert table["float16"] == Tolerance(2e-3, DEFAULT_TOLERANCES["float16"].atol)
    for bad, words in [
        ({"float8": {"rtol": 1}}, "unknown dtype 'float8'"),
        ({"float16": {"rtol": -1}}, "rtol must be a number >= 0"),
        ({"float16": {"tol": 1}}, "expected keys rtol and atol"),
        (["float16"], "expected a table"),
    ]:
        with pytest.raises(ValueError, match=words.replace("(", r"\(")):
            tolerances_from_mapping(bad)  # type: ignore[arg-type]
    toml = tmp_path / "tol.toml"
    toml.write_text("[tolerances.bfloat16]\nrtol = 0.05\natol = 0.001\n")
    assert load_tolerances(toml)["bfloat16"] == Tolerance(0.05, 0.001)
    broken = tmp_path / "tol.json"
    broken.write_text('{"float32": {"rtol": 1e-5,}}')
    with pytest.raises(ValueError, match=r"tol.json:1:\d+: invalid JSON"):
        load_tolerances(broken)
    (tmp_path / "ok.json").write_text(json.dumps({"float64": {"rtol": 0, "atol": 0}}))
    assert load_tolerances(tmp_path / "ok.json")["float64"] == Tolerance(0, 0)


def test_mixed_device_helper() -> None:
    # "meta" stands in for a second device: torch's own add must refuse the mix.
    cases = assert_mixed_device_raises(torch.add, torch.ones(4), torch.ones(4), devices=["cpu", "meta"])
    assert {c.devices for c in cases} == {("meta", "cpu"), ("cpu", "meta")}

    def careless(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.zeros(x.shape)  # never looks at where its inputs live

    with pytest.raises(AssertionError, match="did not raise"):
        assert_mixed_device_raises(careless, torch.ones(4), torch.ones(4), devices=["cpu", "meta"])
    with pytest.raises(ValueError, match="two tensor inputs"):
        assert_mixed_device_raises(torch.neg, torch.ones(4))
