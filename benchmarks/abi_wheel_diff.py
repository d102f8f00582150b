"""Whole torch wheel pair: torch 2.13.0 CPU (183 MB) -> torch 2.14.1 (529 MB).

``xcompat abi diff OLD.whl NEW.whl`` (Python API and torch operators off: this measures
the binary tier) against the floor any wheel reader pays: inflating every ELF member of
both wheels (Python's zipfile, to nowhere). Goal: within 1.2x of the floor. xcompat reads
the two wheels in two processes when both are large, so it is also shown sequentially.

    python benchmarks/abi_wheel_diff.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from abi_common import LAST_CPU, PY, measure, torch_new_wheel, torch_old_wheel, xcompat

INFLATE = r"""
import sys, zipfile
from xcompat.abi.wheel import is_native_member
total = 0
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if not is_native_member(info.filename):
                continue
            with zf.open(info) as fh:
                while True:
                    block = fh.read(1 << 20)
                    if not block:
                        break
                    total += len(block)
print(total)
"""

SEQUENTIAL = r"""
import sys
from xcompat.abi import diff_paths
diff_paths(sys.argv[1], sys.argv[2], python_api="off", torch_ops="off", parallel=False).to_dict()
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    old_wheel, new_wheel = torch_old_wheel(), torch_new_wheel()
    old, new = str(old_wheel), str(new_wheel)
    print(f"{old_wheel.name} ({old_wheel.stat().st_size >> 20} MiB) -> "
          f"{new_wheel.name} ({new_wheel.stat().st_size >> 20} MiB)")
    floor, floor_rss = measure("inflate all ELF members (zipfile, 1 process)", [[PY, "-c", INFLATE, old, new]], args.repeat)
    ours, rss = measure("xcompat abi diff (2 processes)", [
        xcompat("abi", "diff", old, new, "--python-api", "off", "--torch-ops", "off", "--format", "json")], args.repeat)
    seq, seq_rss = measure("xcompat abi diff, sequential", [[PY, "-c", SEQUENTIAL, old, new]], args.repeat)
    base = LAST_CPU["inflate all ELF members (zipfile, 1 process)"]
    print(f"  ratio xcompat / inflate: {ours / floor:.2f}x wall (sequential {seq / floor:.2f}x); CPU "
          f"{LAST_CPU['xcompat abi diff (2 processes)'] / base:.2f}x (sequential "
          f"{LAST_CPU['xcompat abi diff, sequential'] / base:.2f}x); goal within 1.2x")
    print(f"  peak RSS: xcompat {rss} MB (sequential {seq_rss} MB) vs inflate {floor_rss} MB: members are streamed")


if __name__ == "__main__":
    main()
