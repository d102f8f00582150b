"""``xcompat kernels operators``: check the PyTorch operators a built project registers.

With ``--merge-into KERNELS_JSON`` it checks them on each ``--device`` (one checking process per
device, as ``xcompat run``'s kernels stage runs them) and adds the ``operators`` section to the
runner's kernels result, gated by ``--setting`` (the matrix's ``tests.operators``): the CI
kernels stage runs it after ``xcompat kernels run``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.outputs import OutputFile

if TYPE_CHECKING:
    from xcompat.results.kernel_operators import DeviceRun

_TAIL = 64 * 1024  # of a device check's output kept for its one-line detail


def configure_parser(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--site", type=Path, metavar="SITE_FOLDER",
                       help="the folder the project's wheel is installed in (pip install --target)")
    where.add_argument("--wheel", type=Path, metavar="WHEEL",
                       help="the project's wheel: unpacked into a temporary folder and checked from there")
    parser.add_argument("--samples", type=Path, default=None, metavar="FILE",
                        help="the samples file (default: .xcompat/operators.py when it exists)")
    parser.add_argument("--device", action="append", default=None,
                        help="the device to check on: cpu, cuda, cuda:1, mps (default: cpu); "
                             "repeat it with --merge-into")
    parser.add_argument("--tolerances", type=Path, default=None, metavar="FILE",
                        help="a JSON or TOML table of dtype -> {rtol, atol} overriding the defaults")
    parser.add_argument("--no-opcheck", action="store_true", help="skip torch.library.opcheck")
    parser.add_argument("--skip-operator", action="append", default=[], metavar="NS::NAME",
                        help="list this operator without checking it (one that crashes the check); repeatable")
    parser.add_argument("--cell-id", help="the matrix cell this result belongs to")
    parser.add_argument("--json", type=OutputFile(), metavar="OUT", help="write the versioned JSON result to OUT ('-' for stdout)")
    parser.add_argument("--merge-into", type=Path, default=None, metavar="KERNELS_JSON",
                        help="check on each --device and add the operators section to this kernels result "
                             "(written by xcompat kernels run)")
    parser.add_argument("--setting", choices=("gate", "report"), default="gate",
                        help="with --merge-into: the matrix's tests.operators (default: gate)")


def render_text(doc: dict[str, Any]) -> str:
    lines = []
    for op in doc["operators"]:
        keys = ", ".join(op["dispatch_keys"]) or "none"
        lines.append(f"{op['name']:40} {op['status']:14} kernels: {keys}")
        if op["reason"]:
            lines.append(f"    {op['reason']}")
        for check in op["checks"]:
            if check["status"] == "failed":
                lines.append(f"    FAILED {check['name']}: {check['detail']}")
    lines.append(f"status: {doc['status']} - {doc['summary']}")
    return "\n".join(lines) + "\n"


def _samples_path(given: Path | None) -> Path | None:
    if given is not None:
        return given
    default = Path(".xcompat") / "operators.py"
    return default if default.is_file() else None


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import UsageError

    devices = args.device or ["cpu"]
    if args.merge_into is not None:
        if args.json is not None or args.tolerances is not None or args.no_opcheck:
            raise UsageError("--merge-into checks as the kernels stage does: without --json, --tolerances "
                             "or --no-opcheck")
        return _merge_into(args, devices)
    if len(devices) > 1:
        raise UsageError("one --device per check; give --merge-into KERNELS_JSON to check on several")
    with _site(args) as site:
        return _check(args, site, devices[0])


def _check(args: argparse.Namespace, site: Path, device: str) -> int:
    from xcompat.errors import CheckFailed, InputError
    from xcompat.jsonio import dump_json, validate, write_json
    from xcompat.operators import run_operators
    from xcompat.testing.reference import load_tolerances

    tolerances = None
    if args.tolerances is not None:
        try:
            tolerances = load_tolerances(args.tolerances)
        except (OSError, ValueError) as exc:
            raise InputError(str(exc), hint="a table of dtype -> {rtol, atol}") from None
    doc = run_operators(site, samples=_samples_path(args.samples), device=device,
                        cell_id=args.cell_id, tolerances=tolerances, opcheck=not args.no_opcheck,
                        skip=args.skip_operator)
    validate("operators", doc, source="operators result")
    if str(args.json) == "-":
        sys.stdout.write(dump_json(doc))
    else:
        if args.json:
            write_json(args.json, doc, schema="operators")
        sys.stdout.write(render_text(doc))
    if doc["status"] == "failed":
        raise CheckFailed(f"kernels operators: {doc['summary']}")
    return 0


@contextmanager
def _site(args: argparse.Namespace) -> Iterator[Path]:
    """``--site``, or ``--wheel`` unpacked (as ``xcompat run`` installs it) into a folder removed after."""
    if args.site is not None:
        yield args.site
        return
    from xcompat.errors import InputError

    if not args.wheel.is_file():
        raise InputError("no such wheel", file=args.wheel, hint="give the wheel the build made (a .whl file)")
    with tempfile.TemporaryDirectory(prefix="xcompat-operators-site-") as tmp:
        site = Path(tmp) / "site"
        _install(args.wheel, site)
        yield site


def _install(wheel: Path, site: Path) -> None:
    import zipfile

    from xcompat.errors import InputError, XcompatError
    from xcompat.pipeline.install import unpack_wheels

    try:
        if unpack_wheels([wheel], site) is not None:
            return
    except (XcompatError, zipfile.BadZipFile, OSError):
        pass
    # a wheel with scripts or data files, or one that cannot be unpacked: pip's own install, or its error
    proc = subprocess.run([sys.executable, "-I", "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--target", str(site), str(wheel)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise InputError(f"the wheel could not be installed to check it: {last}", file=wheel,
                         hint="give a wheel pip can install")


def _merge_into(args: argparse.Namespace, devices: list[str]) -> int:
    from xcompat.errors import CheckFailed, InputError
    from xcompat.results.kernel_operators import (
        SAMPLES,
        build_section,
        gating_failed,
        merge,
        read_kernels,
        write_merged,
    )

    document = read_kernels(args.merge_into)
    if document is None:
        raise InputError("no kernels result to add the operators to", file=args.merge_into,
                         hint="run xcompat kernels run --json FILE first")
    samples = _samples_path(args.samples)
    # the project's own samples file is shown as xcompat run shows it, wherever the job's folder is
    shown = str(SAMPLES) if samples is not None and samples.parts[-2:] == SAMPLES.parts else (
        str(samples) if samples is not None else None)
    with _site(args) as site:
        runs = [_device_check(site, device, samples, args.cell_id) for device in devices]
    section = build_section(runs, args.setting, shown)
    merged = merge(document, section)
    try:
        write_merged(args.merge_into, merged)
    except InputError as exc:
        raise InputError(f"project operators not recorded: {exc.message}", file=args.merge_into) from None
    print(f"kernels operators: {section['summary']}", flush=True)
    if gating_failed(merged):
        raise CheckFailed(f"kernels operators: {section['summary']}")
    return 0


def _device_check(site: Path, device: str, samples: Path | None, cell_id: str | None) -> DeviceRun:
    """One device's check in a process of its own, as ``xcompat run`` runs it (again without an
    operator that crashed it); its output is shown."""
    from xcompat.results.kernel_operators import check_device

    return check_device(device, lambda skip, tries: _attempt(site, device, samples, cell_id, skip))


def _attempt(site: Path, device: str, samples: Path | None, cell_id: str | None, skip: list[str]) -> DeviceRun:
    from xcompat.results.kernel_operators import OPERATORS_TIMEOUT_S, device_argv, device_run, output_detail

    with tempfile.TemporaryDirectory(prefix="xcompat-operators-") as tmp:
        out = Path(tmp) / "operators.json"
        argv = [sys.executable, "-I", "-m", "xcompat",
                *(str(a) for a in device_argv(site, device, out, samples, cell_id, skip))]
        print(f"kernels operators: checking on {device}" + (f" without {', '.join(skip)}" if skip else ""),
              flush=True)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False,
                                  timeout=OPERATORS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return device_run(device, None, out, f"timed out after {OPERATORS_TIMEOUT_S:.0f}s")
        sys.stdout.write(proc.stdout[-_TAIL:])
        sys.stderr.write(proc.stderr[-_TAIL:])
        return device_run(device, proc.returncode, out,
                          output_detail(proc.returncode, proc.stdout[-_TAIL:] + proc.stderr[-_TAIL:]))
