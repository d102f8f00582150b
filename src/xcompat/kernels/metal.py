"""The Metal (MPS) ops backend: ``kernels/metal/xk_kernels.metal`` compiled with
``torch.mps.compile_shader`` (torch >= 2.7), with the call surface of the torch library
(``add``, ``fma``, ``exp``, ``softmax``, ``scatter_add``, ``set_poison``), so the runner
treats it as one more ops backend.

bfloat16 and the reductions are not part of the Metal shader set; ``unsupported`` names
that, and those cases are reported as skipped with the reason, never as passed.
"""

from __future__ import annotations

from typing import Any

from xcompat.errors import UnavailableError
from xcompat.kernels import cases as casegen
from xcompat.resources import data_dir

_SUFFIX = {"float32": "float", "float16": "half"}
_POISON = {0: float("nan"), 1: float("nan"), 2: -7680.0}
SHADER = ("metal", "xk_kernels.metal")


class MetalKernels:
    def __init__(self) -> None:
        import torch

        compile_shader = getattr(torch.mps, "compile_shader", None)
        if compile_shader is None:
            raise UnavailableError(f"torch {torch.__version__} has no torch.mps.compile_shader (needs torch >= 2.7)")
        source = data_dir("kernels").joinpath(*SHADER).read_text(encoding="utf-8")
        self.lib = compile_shader(source)
        self.torch = torch
        self.poison_mode = 0

    # -- ops backend protocol ---------------------------------------------------------
    def set_poison(self, mode: int) -> int:
        previous, self.poison_mode = self.poison_mode, int(mode)
        return previous

    def unsupported(self, case: casegen.Case) -> str | None:
        if case.dtype == "bfloat16":
            return "bfloat16 is not in the Metal shader set"
        if case.kernel in casegen.REDUCTIONS:
            return f"{case.kernel} is not in the Metal shader set"
        return None

    def build_info(self) -> dict[str, Any]:
        return {"library": "/".join(SHADER), "build_dir": "", "key": "0" * 20, "cached": False, "seconds": 0.0,
                "with_device": True, "toolchain": {"compiler": "torch.mps.compile_shader", "nvcc": None},
                "device_archs": ["apple"], "arch_source": "device", "notes": []}

    def _check(self, op: str, *tensors: Any) -> None:
        for t in tensors:
            if t.device.type != "mps":
                raise RuntimeError(f"xcompat_kernels::{op}: expected all tensors on the same device (mps), "
                                   f"got one on {t.device}")

    def _out(self, like: Any) -> Any:
        # the poison fill shows an element the shader did not write
        return self.torch.full_like(like, _POISON[self.poison_mode], memory_format=self.torch.contiguous_format)

    def add(self, a: Any, b: Any) -> Any:
        self._check("add", a, b)
        out = self._out(a)
        if out.numel():
            getattr(self.lib, f"xk_add_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), b.contiguous(), out)
        return out

    def fma(self, a: Any, b: Any, c: Any) -> Any:
        self._check("fma", a, b, c)
        out = self._out(a)
        if out.numel():
            getattr(self.lib, f"xk_fma_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), b.contiguous(), c.contiguous(), out)
        return out

    def exp(self, a: Any) -> Any:
        self._check("exp", a)
        out = self._out(a)
        if out.numel():
            getattr(self.lib, f"xk_exp_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), out)
        return out

    def softmax(self, x: Any) -> Any:
        self._check("softmax", x)
        xf = x.float().contiguous()
        out = self._out(xf)
        cols = 1 if x.dim() == 0 else x.shape[-1]
        rows = 0 if cols == 0 else xf.numel() // cols
        if rows:
            self.lib.xk_softmax_float(xf, out, cols, threads=rows)
        return out.to(x.dtype)

    def scatter_add(self, idx: Any, w: Any, bins: int, threads: int = 0) -> Any:
        self._check("scatter_add", idx, w)
        torch = self.torch
        out = torch.zeros(bins, device="mps")
        bad = torch.zeros(1, dtype=torch.int32, device="mps")
        if idx.numel():
            # the shader skips and counts indices outside [0, bins) instead of writing there
            self.lib.xk_scatter_add(idx.contiguous(), w.contiguous(), out, bad, bins, threads=idx.numel())
            nbad = int(bad.item())
            if nbad:
                raise RuntimeError(f"xcompat_kernels::scatter_add: {nbad} index value(s) outside [0, {bins})")
        return out

    def command_buffer_check(self) -> str:
        torch = self.torch
        n = 1 << 20
        a = torch.randn(n, device="mps")
        b = torch.randn(n, device="mps")
        out = torch.full_like(a, float("nan"))
        self.lib.xk_add_float(a, b, out)
        torch.mps.synchronize()  # waits for the command buffer to complete
        if torch.isnan(out).any():
            raise AssertionError("elements still poisoned after the command buffer completed")
        if not torch.equal(out.cpu(), a.cpu() + b.cpu()):
            raise AssertionError("Metal add differs from the CPU result after completion")
        return f"{n} elements written and visible after torch.mps.synchronize()"
