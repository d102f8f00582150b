"""Which device backends a test session may use: detection, selection and skip reasons.

Detection goes through ``xcompat.devices`` (no CUDA/HIP initialisation) and happens only
when a test asks for a device, so suites that never use the ``device`` fixture or the
backend markers pay nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

BACKENDS: tuple[str, ...] = ("cpu", "cuda", "rocm", "mps")
# torch's device type for each backend: ROCm builds of torch call the GPU "cuda".
TORCH_DEVICE: Mapping[str, str] = {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "mps": "mps"}
ENV_VAR = "XCOMPAT_BACKENDS"


@dataclass(frozen=True, kw_only=True)
class BackendState:
    available: tuple[str, ...]
    selected: tuple[str, ...]
    reasons: Mapping[str, str] = field(default_factory=dict)  # why a backend is unavailable

    def skip_reason(self, backend: str) -> str | None:
        """None when tests may run on ``backend``; else the reason they are skipped."""
        if backend not in self.available:
            why = self.reasons.get(backend, "not available on this machine")
            return f"backend {backend} not available: {why}"
        if backend not in self.selected:
            return f"backend {backend} not selected (--xcompat-backends={','.join(self.selected)})"
        return None


def parse_selection(value: str | None) -> tuple[str, ...] | None:
    """``"cpu,cuda"`` -> ("cpu", "cuda"); ``"all"`` -> every backend; None/"" / "auto" -> None."""
    if value is None or value.strip() in ("", "auto"):
        return None
    if value.strip() == "all":
        return BACKENDS
    names = tuple(dict.fromkeys(n.strip().lower() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise ValueError(
            f"unknown backend(s) {', '.join(unknown)}; choose from {', '.join(BACKENDS)}, all or auto"
        )
    return names


def detect(env: Mapping[str, str] | None = None) -> tuple[tuple[str, ...], dict[str, str]]:
    """(available backends, reasons for the others); never initialises a device runtime."""
    env = os.environ if env is None else env
    try:
        from xcompat.devices import probe_backend
    except ImportError:  # a trimmed installation: CPU only
        return ("cpu",), {b: "xcompat.devices is not installed" for b in BACKENDS if b != "cpu"}
    available: list[str] = []
    reasons: dict[str, str] = {}
    for backend in BACKENDS:
        try:
            result = probe_backend(backend, env)
        except Exception as exc:  # noqa: BLE001 - a broken probe must not break the test session
            reasons[backend] = f"probe failed: {exc}"
            continue
        if result.available:
            available.append(backend)
        else:
            reasons[backend] = result.reason
    return tuple(available), reasons


def resolve(option: str | None, env: Mapping[str, str] | None = None) -> BackendState:
    env = os.environ if env is None else env
    selection = parse_selection(option if option is not None else env.get(ENV_VAR))
    available, reasons = detect(env)
    return BackendState(available=available, selected=selection or available, reasons=reasons)


def marker_backends(args: Iterable[object]) -> tuple[str, ...]:
    names = tuple(str(a).lower() for a in args)
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise ValueError(f"backend markers take names from {', '.join(BACKENDS)}; got {list(names)}")
    return names
