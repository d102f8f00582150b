"""The tolerance table (``kernels/tolerances.json``), validated when loaded."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.resources import data_dir

DTYPES = ("float32", "float16", "bfloat16")
SCALES = ("elementwise", "abs_sum")
BACKENDS = ("cpu", "cuda", "rocm", "mps")


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    rtol: float
    atol: float
    scale: str = "elementwise"

    @classmethod
    def exact(cls, scale: str = "elementwise") -> Tolerance:
        return cls(rtol=0.0, atol=0.0, scale=scale)


@dataclass(frozen=True)
class ToleranceTable:
    entries: dict[str, dict[str, Any]]

    def kernels(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def get(self, kernel: str, dtype: str, backend: str = "cpu") -> Tolerance:
        entry = self.entries.get(kernel)
        if entry is None:
            raise KeyError(f"no tolerances for kernel {kernel!r}")
        override = entry.get("backends", {}).get(backend, {}).get(dtype)
        tol = override or entry.get(dtype)
        if tol is None:
            raise KeyError(f"no tolerance for kernel {kernel!r} at dtype {dtype!r}")
        return Tolerance(rtol=tol["rtol"], atol=tol["atol"], scale=entry["scale"])


def default_path() -> Path:
    return data_dir("kernels") / "tolerances.json"


def _check_pair(value: Any, where: str, path: Path) -> None:
    if not isinstance(value, dict) or set(value) != {"rtol", "atol"}:
        raise InputError(f"{where}: expected an object with exactly 'rtol' and 'atol'", file=path)
    for k in ("rtol", "atol"):
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v >= 1:
            raise InputError(f"{where}.{k}: expected a number in [0, 1), got {v!r}", file=path)


def parse_table(document: Any, path: Path) -> ToleranceTable:
    if not isinstance(document, dict) or document.get("version") != 1:
        raise InputError("expected a JSON object with \"version\": 1", file=path)
    kernels = document.get("kernels")
    if not isinstance(kernels, dict) or not kernels:
        raise InputError("'kernels' must be a non-empty object", file=path)
    for name, entry in kernels.items():
        where = f"kernels.{name}"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected an object", file=path)
        if entry.get("scale") not in SCALES:
            raise InputError(f"{where}.scale: expected one of {', '.join(SCALES)}, got {entry.get('scale')!r}", file=path)
        unknown = set(entry) - {"scale", "backends", *DTYPES}
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}", file=path)
        if not any(d in entry for d in DTYPES):
            raise InputError(f"{where}: no dtype entry (expected one of {', '.join(DTYPES)})", file=path)
        for d in DTYPES:
            if d in entry:
                _check_pair(entry[d], f"{where}.{d}", path)
        for backend, per_dtype in entry.get("backends", {}).items():
            if backend not in BACKENDS or not isinstance(per_dtype, dict):
                raise InputError(f"{where}.backends.{backend}: unknown backend or not an object", file=path)
            for d, pair in per_dtype.items():
                if d not in DTYPES:
                    raise InputError(f"{where}.backends.{backend}.{d}: unknown dtype", file=path)
                _check_pair(pair, f"{where}.backends.{backend}.{d}", path)
    return ToleranceTable(kernels)


def load_tolerances(path: Path | None = None) -> ToleranceTable:
    path = default_path() if path is None else Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("tolerance table not found", file=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno, column=exc.colno) from None
    return parse_table(document, path)
