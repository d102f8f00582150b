"""``xcompat probe``: describe this machine's device stack and check it for native extensions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the versioned JSON document on stdout")
    parser.add_argument("-o", "--output", type=OutputFile(stdout=False), metavar="FILE", help="also write the JSON document to FILE")
    parser.add_argument("--wheel", metavar="WHEEL", help="check that the GPUs here are covered by this wheel's fatbinary")
    parser.add_argument("--cell-id", help="the matrix cell this result belongs to")


def render_text(doc: dict[str, Any]) -> str:
    lines = []
    cpu, torch, py = doc["cpu"], doc["torch"], doc["python"]
    lines.append(f"os:      {doc['os']['platform']} (glibc {doc['os']['glibc'] or '-'})")
    lines.append(f"cpu:     {cpu['model'] or '?'} [{cpu['arch']}]; kernel paths: {', '.join(cpu['kernel_isa_paths'])}"
                 f" (runs: {cpu['kernel_isa_selected'] or 'none: the forced path is unusable'})")
    ft = " free-threaded" if py["free_threaded"] else ""
    lines.append(f"python:  {py['version']} {py['soabi'] or ''}{ft}")
    if torch.get("installed"):
        dev = f"CUDA {torch['cuda']}" if torch.get("cuda") else (f"HIP {torch['hip']}" if torch.get("hip") else "CPU")
        lines.append(f"torch:   {torch['version']} ({dev}; cxx11 ABI {torch['cxx11_abi']}; "
                     f"archs {' '.join(torch['arch_list']) or '-'}; CPU capability {torch['cpu_capability']})")
    else:
        lines.append("torch:   not installed")
    lines.append(f"numpy:   {doc['numpy'].get('version') or 'not installed'}")
    cuda = doc["cuda"]
    lines.append(f"driver:  CUDA {cuda['driver_version']}" if cuda["driver_version"]
                 else f"driver:  none ({cuda['driver_absent_reason']})")
    for d in doc["devices"]:
        mem = f", {d['memory_bytes'] / 2**30:.1f} GiB" if d.get("memory_bytes") else ""
        lines.append(f"device:  [{d['backend']}:{d['index']}] {d['name']} ({d['arch']}{mem})")
    if not doc["devices"]:
        lines.append("device:  no GPU")
    for name, b in doc["backends"].items():
        lines.append(f"backend: {name:5} {'yes' if b['available'] else 'no '}  {b['reason']}")
    for c in doc["checks"]:
        lines.append(f"check:   {c['status']:7} {c['name']}: {c['reason']}")
    lines.append(f"status:  {doc['status']} - {doc['summary']}")
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import CheckFailed
    from xcompat.jsonio import dump_json, validate, write_json
    from xcompat.probe import collect_probe

    doc = collect_probe(wheel=args.wheel, cell_id=args.cell_id)
    validate("probe", doc, source="probe result")
    if args.output:
        write_json(args.output, doc, schema="probe")
    sys.stdout.write(dump_json(doc) if args.json else render_text(doc))
    if doc["status"] == "failed":
        raise CheckFailed(f"probe: {doc['summary']}")
    return 0
