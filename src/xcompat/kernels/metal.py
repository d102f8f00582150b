"""The Metal (MPS) lane: ``kernels/metal/xk_kernels.metal`` compiled with
``torch.mps.compile_shader`` (torch >= 2.7) and run on the conformance cases.

bfloat16 and the reductions are not part of the Metal shader set; those cases are
reported as skipped with that reason, never as passed.
"""

from __future__ import annotations

from typing import Any

from xcompat.errors import UnavailableError
from xcompat.kernels import cases as casegen
from xcompat.kernels.tolerances import Tolerance
from xcompat.resources import data_dir

_SUFFIX = {"float32": "float", "float16": "half"}


class MetalKernels:
    def __init__(self) -> None:
        import torch

        compile_shader = getattr(torch.mps, "compile_shader", None)
        if compile_shader is None:
            raise UnavailableError(f"torch {torch.__version__} has no torch.mps.compile_shader (needs torch >= 2.7)")
        source = (data_dir("kernels") / "metal" / "xk_kernels.metal").read_text(encoding="utf-8")
        self.lib = compile_shader(source)
        self.torch = torch

    # the same call surface as torch.ops.xcompat_kernels for the kernels Metal implements
    def _out(self, like: Any, poison: float) -> Any:
        return self.torch.full_like(like, poison, memory_format=self.torch.contiguous_format)

    def add(self, a: Any, b: Any, poison: float = float("nan")) -> Any:
        out = self._out(a, poison)
        if out.numel():
            getattr(self.lib, f"xk_add_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), b.contiguous(), out)
        return out

    def fma(self, a: Any, b: Any, c: Any, poison: float = float("nan")) -> Any:
        out = self._out(a, poison)
        if out.numel():
            getattr(self.lib, f"xk_fma_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), b.contiguous(), c.contiguous(), out)
        return out

    def exp(self, a: Any, poison: float = float("nan")) -> Any:
        out = self._out(a, poison)
        if out.numel():
            getattr(self.lib, f"xk_exp_{_SUFFIX[str(a.dtype)[6:]]}")(a.contiguous(), out)
        return out

    def softmax(self, x: Any, poison: float = float("nan")) -> Any:
        xf = x.float().contiguous()
        out = self._out(xf, poison)
        cols = 1 if x.dim() == 0 else x.shape[-1]
        rows = 0 if cols == 0 else xf.numel() // cols
        if rows:
            self.lib.xk_softmax_float(xf, out, cols, threads=rows)
        return out.to(x.dtype)

    def scatter_add(self, idx: Any, w: Any, bins: int, threads: int = 0) -> Any:
        out = self.torch.zeros(bins, device="mps")
        if idx.numel():
            self.lib.xk_scatter_add(idx.contiguous(), w.contiguous(), out, threads=idx.numel())
        return out

    def run_case(self, case: casegen.Case, tol: Tolerance) -> dict[str, Any]:
        from xcompat.kernels.runner import run_case

        if case.dtype == "bfloat16" or case.kernel in casegen.REDUCTIONS:
            what = "bfloat16" if case.dtype == "bfloat16" else case.kernel
            return {**case.to_dict(), "status": "skipped", "mismatches": 0, "max_abs_err": None,
                    "max_rel_err": None, "detail": f"{what} is not in the Metal shader set"}
        return run_case(self, case, "mps", tol)

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
