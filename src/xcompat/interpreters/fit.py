"""Does a wheel install on an interpreter? Its file name's tags against the interpreter's."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from xcompat.errors import InputError
from xcompat.interpreters.discover import Interpreter


def wheel_tags(wheel: Path) -> frozenset[str]:
    try:
        _name, _version, _build, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as err:
        raise InputError(f"{wheel.name}: not a wheel file name ({err})") from None
    return frozenset(str(t) for t in tags)


def fits(wheel: Path, interpreter: Interpreter) -> bool:
    return bool(wheel_tags(wheel) & set(interpreter.tags))


def check_fit(wheel: Path, interpreter: Interpreter, *, cell: str | None = None) -> None:
    """InputError naming the wheel, the interpreter and the cell when the wheel does not fit."""
    if not interpreter.tags:
        return  # the interpreter could not list its tags (no packaging there): pip decides
    if fits(wheel, interpreter):
        return
    where = f" for cell {cell}" if cell else ""
    raise InputError(f"the wheel {wheel.name} does not install on Python {interpreter.matrix_python} "
                     f"({interpreter.path}){where}: its tags are {', '.join(sorted(wheel_tags(wheel)))}, "
                     f"the interpreter's best is {interpreter.tags[0]}",
                     hint="build the wheel with the cell's interpreter, or test it with the one it was built for")


def installable_wheel(base: Path) -> Path | None:
    """The wheel the running interpreter installs: ``base`` itself, or the first of a folder's
    wheels whose tags fit (None: none does, or there is none)."""
    from packaging.tags import sys_tags

    wheels = [base] if base.is_file() else sorted(base.glob("*.whl")) if base.is_dir() else []
    supported = {str(t) for t in sys_tags()}
    for wheel in wheels:
        try:
            if wheel.suffix == ".whl" and wheel_tags(wheel) & supported:
                return wheel
        except InputError:
            continue
    return None
