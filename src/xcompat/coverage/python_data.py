"""Read coverage.py data files through coverage's own API.

``CoverageData`` reads the SQLite data (never parsed by hand here); ``Coverage.analysis2``
gives the executable statements of each file with the project's exclusion rules
(``# pragma: no cover`` and the ``[report] exclude_lines`` of its configuration).
Files measured through a plugin (Cython's ``Cython.Coverage`` for ``.pyx`` line tracing)
are analysed with that plugin loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError, UnavailableError

# Configuration files coverage.py reads, in its own order of preference.
_CONFIG_FILES = (".coveragerc", "setup.cfg", "tox.ini", "pyproject.toml")


@dataclass(frozen=True)
class MeasuredPythonFile:
    recorded: str  # the path coverage.py recorded
    analysed: str  # the file that was parsed for statements (recorded, or its repository copy)
    statements: tuple[int, ...]
    executed: frozenset[int]
    plugin: str  # "" for plain Python


def coverage_version() -> str:
    try:
        import coverage
    except ImportError:
        return ""
    return str(coverage.__version__)


def find_config(source_root: Path) -> str | bool:
    """The coverage.py configuration of the project under ``source_root``, or False for none."""
    for name in _CONFIG_FILES:
        candidate = source_root / name
        if not candidate.is_file():
            continue
        if name == ".coveragerc":
            return str(candidate)
        text = candidate.read_text(encoding="utf-8", errors="replace")
        if ("[tool.coverage" if name == "pyproject.toml" else "[coverage:") in text:
            return str(candidate)
    return False


def read_python_data(
    data_file: str | Path,
    *,
    config: str | bool,
    locate: Callable[[str], str | None],
    warn: Callable[[str], None],
) -> Iterator[MeasuredPythonFile]:
    """Yield every measured file of one coverage.py data file.

    ``locate(recorded)`` returns a readable copy of a recorded file (the recorded path
    itself when it still exists, else its repository counterpart) or None.
    Raises InputError naming the file when the data cannot be read.
    """
    try:
        import coverage
        from coverage import CoverageData
        from coverage.exceptions import CoverageException
    except ImportError:
        raise UnavailableError(
            "coverage.py is not installed", hint="pip install 'xcompat[coverage]'"
        ) from None
    path = Path(data_file)
    if not path.is_file():
        raise InputError("coverage.py data file not found", file=path)
    data = CoverageData(basename=str(path))
    try:
        data.read()
        measured = sorted(data.measured_files())
        tracers = {name: data.file_tracer(name) or "" for name in measured}
    except CoverageException as exc:
        raise InputError(
            f"unreadable coverage.py data: {_one_line(exc)}",
            file=path,
            hint="the file is truncated or not coverage.py data; rerun the tests",
        ) from None
    plugins = sorted({t.rsplit(".", 1)[0] for t in tracers.values() if t})
    cov = coverage.Coverage(data_file=str(path), config_file=config)
    if plugins:
        cov.set_option("run:plugins", plugins)
    try:
        cov.load()
    except CoverageException as exc:
        raise InputError(f"unreadable coverage.py data: {_one_line(exc)}", file=path) from None
    except ImportError as exc:
        # Without the plugin (Cython for .pyx line tracing) its files cannot be analysed;
        # report the plain Python files and say which ones were left out.
        skipped = [name for name, t in tracers.items() if t]
        warn(
            f"{path}: coverage.py plugin {exc.name or ', '.join(plugins)} is not installed, so "
            f"{len(skipped)} file(s) it measured are left out (install Cython to report .pyx files)"
        )
        cov = coverage.Coverage(data_file=str(path), config_file=config)
        cov.load()
        measured = [name for name in measured if not tracers[name]]
    for recorded in measured:
        source = locate(recorded)
        if source is None:
            continue
        try:
            _, statements, _, _, _ = cov.analysis2(source)
        except CoverageException:
            # No source or not Python (e.g. a template measured by a plugin we cannot analyse).
            continue
        yield MeasuredPythonFile(
            recorded=recorded,
            analysed=source,
            statements=tuple(statements),
            executed=frozenset(data.lines(recorded) or ()),
            plugin=tracers[recorded],
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
