from __future__ import annotations

import json
from pathlib import Path

import pytest

from xcompat.errors import InputError
from xcompat.kernels.cases import FLOAT_DTYPES, KERNELS
from xcompat.kernels.tolerances import load_tolerances, parse_table


def test_shipped_table_covers_every_kernel_and_dtype() -> None:
    table = load_tolerances()
    for kernel in KERNELS:
        dtypes = FLOAT_DTYPES if kernel in ("add", "fma", "exp", "softmax") else ("float32",)
        for dtype in dtypes:
            tol = table.get(kernel, dtype)
            assert 0 <= tol.rtol < 1 and 0 <= tol.atol < 1


def test_backend_override_wins() -> None:
    table = load_tolerances()
    assert table.get("exp", "float32", "mps").rtol > table.get("exp", "float32", "cpu").rtol


def test_lower_precision_dtypes_get_looser_tolerances() -> None:
    table = load_tolerances()
    for kernel in ("add", "fma", "exp", "softmax"):
        assert table.get(kernel, "float32").rtol < table.get(kernel, "float16").rtol < table.get(kernel, "bfloat16").rtol


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "version"),
        ({"version": 2, "kernels": {}}, "version"),
        ({"version": 1, "kernels": {}}, "non-empty"),
        ({"version": 1, "kernels": {"add": {"scale": "weird", "float32": {"rtol": 0, "atol": 0}}}}, "scale"),
        ({"version": 1, "kernels": {"add": {"scale": "elementwise", "float32": {"rtol": -1, "atol": 0}}}}, "rtol"),
        ({"version": 1, "kernels": {"add": {"scale": "elementwise", "float32": {"rtol": 0}}}}, "exactly"),
        ({"version": 1, "kernels": {"add": {"scale": "elementwise", "float64": {"rtol": 0, "atol": 0}}}}, "unknown key"),
        ({"version": 1, "kernels": {"add": {"scale": "elementwise"}}}, "no dtype"),
        ({"version": 1, "kernels": {"add": {"scale": "elementwise", "float32": {"rtol": True, "atol": 0}}}}, "rtol"),
        (
            {"version": 1, "kernels": {"add": {"scale": "elementwise", "float32": {"rtol": 0, "atol": 0},
                                               "backends": {"tpu": {}}}}},
            "unknown backend",
        ),
    ],
)
def test_malformed_tables_are_refused(document: object, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_table(document, Path("tol.json"))
    assert info.value.file == "tol.json"


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "tol.json"
    path.write_text('{"version": 1,\n  "kernels": {,}}')
    with pytest.raises(InputError) as info:
        load_tolerances(path)
    assert info.value.line == 2 and info.value.file == str(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_tolerances(tmp_path / "nope.json")


def test_roundtrip_of_shipped_file_is_plain_json() -> None:
    from xcompat.kernels.tolerances import default_path

    assert json.loads(default_path().read_text())["version"] == 1
