"""``xcompat kernels run``: build and run the conformance kernels with a fallback chain."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xcompat.outputs import OutputFile

BACKEND_CHOICES = ("auto", "cpu", "cuda", "rocm", "mps")
KERNEL_CHOICES = ("add", "fma", "exp", "softmax", "sum_deterministic", "sum_atomic", "scatter_add",
                  "_broken_add_stride")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                        help="backend to run on; auto walks --order (default: auto). An explicit backend that is "
                        "not available exits 5")
    parser.add_argument("--order", metavar="LIST", default=None,
                        help="comma-separated fallback order for --backend auto (default: cuda,rocm,mps,cpu)")
    parser.add_argument("--required-backend", dest="required", action="append", default=[],
                        choices=BACKEND_CHOICES[1:], metavar="B",
                        help="a backend this lane must run on; ending on another is a fallback and fails "
                        "(repeatable)")
    parser.add_argument("--kernel", dest="kernels", action="append", choices=KERNEL_CHOICES, metavar="K",
                        help=f"run only this kernel (repeatable; one of {', '.join(KERNEL_CHOICES[:-1])})")
    parser.add_argument("--json", type=OutputFile(), metavar="OUT", help="write the versioned JSON result to OUT ('-' for stdout)")
    parser.add_argument("--no-opcheck", action="store_true", help="skip torch.library.opcheck on the operators")
    parser.add_argument("--cell-id", help="the matrix cell this result belongs to")
    parser.add_argument("--gpu-archs", metavar="LIST", default=None,
                        help="device architectures to build for, e.g. 'sm_80 sm_90' or gfx90a (default: the matrix "
                        "cell's XCOMPAT_GPU_ARCHS, else TORCH_CUDA_ARCH_LIST/PYTORCH_ROCM_ARCH, else this machine's GPUs)")


def render_text(doc: dict[str, Any]) -> str:
    lines = ["fallback chain:"]
    for s in doc["fallback"]["steps"]:
        mark = "taken  " if s["taken"] else "skipped"
        lines.append(f"  {s['backend']:5} {mark} {s['probe_seconds'] * 1000:7.2f} ms  {s['reason']}")
    if doc.get("isa"):
        isa = doc["isa"]
        lines.append(f"CPU paths: {', '.join(isa['supported'])} (best {isa['best']}, selection {isa['source']})")
    b = doc["build"]
    lines.append(f"build: {'cached' if b['cached'] else 'compiled'} in {b['seconds']:.2f} s ({b['build_dir']})")
    lines.append(f"{'kernel':20} {'status':8} {'passed':>7} {'failed':>7} {'skipped':>8}")
    for k in doc["kernels"]:
        c = k["counts"]
        lines.append(f"{k['name']:20} {k['status']:8} {c['passed']:7} {c['failed']:7} {c['skipped']:8}")
        for case in k["cases"]:
            if case["status"] == "failed":
                where = f" [{case['isa']}]" if case.get("isa") else ""
                lines.append(f"    FAILED {case['id']}{where}: {case['detail']}")
    for name, r in doc["opcheck"].items():
        if r["status"] != "passed":
            lines.append(f"opcheck {name}: {r['status']} {r['detail'] or ''}")
    for c in doc["checks"]:
        lines.append(f"check {c['name']:32} {c['status']:8} {c['detail'] or ''}")
    lines.append(f"status: {doc['status']} - {doc['summary']}")
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import CheckFailed, UnavailableError
    from xcompat.jsonio import dump_json, validate, write_json
    from xcompat.kernels import run_kernels

    gpu_archs = getattr(args, "gpu_archs", None)
    try:
        doc = run_kernels(
            backend=args.backend,
            order=args.order,
            required=args.required,
            kernels=args.kernels,
            cell_id=args.cell_id,
            opcheck=not args.no_opcheck,
            gpu_archs=gpu_archs.replace(",", " ").split() if gpu_archs else None,
        )
    except UnavailableError as exc:
        # the lane could not run: its result still goes to --json, for the report
        result = getattr(exc, "result", None)
        if result is not None and args.json and str(args.json) != "-":
            write_json(args.json, result, schema="kernels")
        raise
    validate("kernels", doc, source="kernels result")
    if str(args.json) == "-":
        sys.stdout.write(dump_json(doc))
    else:
        if args.json:
            write_json(args.json, doc, schema="kernels")
        sys.stdout.write(render_text(doc))
    if doc["status"] == "fallback":
        raise CheckFailed(f"kernels: {doc['summary']}: a required lane that ran on a fallback backend is not a pass")
    if doc["status"] == "failed":
        raise CheckFailed(f"kernels: {doc['summary']}")
    return 0
