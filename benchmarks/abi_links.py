"""Torch link check: one extension against each torch version (goal: < 0.2 s each).

torchvision 0.28.0's ``_C.so`` (built for torch 2.13.0) against torch 2.13.0 (installed)
and torch 2.14.1 (wheel; its ``torch/lib`` is unpacked once into a cache first). The
figure per torch is the check itself (``seconds`` in the result); the whole command,
interpreter start included, is shown against ``nm -D`` of the libraries it has to search,
which is what a script doing the same without a hash lookup starts from.

    python benchmarks/abi_links.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from abi_common import CACHE, measure, released_wheel, torch_new_wheel, xcompat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import importlib.util

    # no "import torch" here: a parent's memory would show up in its children's peak RSS
    site = Path(importlib.util.find_spec("torch").origin).parent.parent
    ext = CACHE / "torchvision-0.28.0" / "_C.so"
    if not ext.exists():
        ext.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(released_wheel("torchvision", "0.28.0")) as zf:
            ext.write_bytes(zf.read("torchvision/_C.so"))
    torch_lib = site / "torch" / "lib"
    libs = [str(p) for p in sorted(torch_lib.glob("*.so*"))]
    nm, _ = measure("nm -D of the installed torch/lib (what a script reads)", [["nm", "-D", "--defined-only", *libs]], args.repeat)
    cli, _rss = measure("xcompat abi links (one torch, whole command)", [
        xcompat("abi", "links", str(ext), "--torch", str(site), "--format", "json")], args.repeat)
    print(f"  ratio whole command / nm -D: {cli / nm:.2f}x")
    from xcompat.abi.links import check_links, locate_torch

    torches = [site, torch_new_wheel()]
    t = time.perf_counter()
    for spec in torches:
        locate_torch(spec)  # unpacks the wheel's torch/lib once
    print(f"preparing torch installations (cached after the first run): {time.perf_counter() - t:.2f} s")
    per = {}
    for _ in range(args.repeat):
        doc = check_links(ext, torches)
        for r in doc["torches"]:
            per.setdefault(r["torch_version"], []).append(r["seconds"])
    for version, secs in per.items():
        r = next(x for x in doc["torches"] if x["torch_version"] == version)
        print(f"  torch {version:<14} {statistics.median(secs):.3f} s per check  "
              f"({r['counts']['checked']} imports checked, {len(r['missing'])} missing, {r['libraries_searched']} libraries)")


if __name__ == "__main__":
    main()
