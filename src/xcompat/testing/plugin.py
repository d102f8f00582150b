"""pytest plugin (``pytest11`` entry point ``xcompat``): device parametrisation and backend markers.

Loaded by every pytest run where xcompat is installed, so it imports nothing heavy and does
nothing unless a test opts in:

* the ``device`` fixture: a test that takes ``device`` runs once per selected, available
  backend (``cpu``, ``cuda``, ``rocm``, ``mps``) and receives torch's device string
  (ROCm's is ``"cuda"``); ``xcompat_backend`` gives the backend name itself;
* ``@pytest.mark.requires_backend("cuda", "rocm")``: skip unless one of them is usable;
  on a ``device`` test it also limits the parametrisation to those backends;
* ``@pytest.mark.exclude_backend("mps", reason="...")``: skip that backend's case;
* ``--xcompat-backends cpu,cuda|all|auto`` (or ``XCOMPAT_BACKENDS``): which backends to
  run. A selected backend that is not available still appears, skipped with the reason,
  so a green CPU-only run is never mistaken for GPU coverage.

A project's own ``device`` fixture or an explicit ``parametrize("device", ...)`` wins.
"""

from __future__ import annotations

from typing import Any

import pytest

_STATE_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("xcompat", "xcompat device backends")
    group.addoption(
        "--xcompat-backends",
        dest="xcompat_backends",
        default=None,
        metavar="LIST",
        help="backends for the device fixture: comma list of cpu,cuda,rocm,mps, 'all' or 'auto' "
        "(default: auto = every available backend; env XCOMPAT_BACKENDS)",
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "requires_backend(*names): skip unless one of these xcompat backends is available"
    )
    config.addinivalue_line(
        "markers", "exclude_backend(*names, reason=None): skip the device-parametrised case of these backends"
    )
    config.addinivalue_line(
        "markers",
        "check_leaks(kinds='host', repeats=5, threshold=1048576): repeat the test and fail it if memory grows "
        "(under xcompat test the outcome is 'leaked')",
    )
    option = config.getoption("xcompat_backends", None)
    if option is not None:
        from xcompat.testing.backends import parse_selection

        try:
            parse_selection(option)
        except ValueError as exc:
            raise pytest.UsageError(f"--xcompat-backends: {exc}") from None


def _state(config: Any) -> Any:
    state = config.stash.get(_STATE_KEY, None)
    if state is None:
        from xcompat.testing.backends import resolve

        state = resolve(config.getoption("xcompat_backends", None))
        config.stash[_STATE_KEY] = state
    return state


def _marker_names(node: Any, name: str) -> tuple[str, ...]:
    from xcompat.testing.backends import marker_backends

    names: list[str] = []
    for mark in node.iter_markers(name):
        try:
            names.extend(marker_backends(mark.args))
        except ValueError as exc:
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.{name}: {exc}") from None
    return tuple(dict.fromkeys(names))


def _exclusion_reasons(node: Any) -> dict[str, str]:
    from xcompat.testing.backends import marker_backends

    reasons: dict[str, str] = {}
    for mark in node.iter_markers("exclude_backend"):
        why = mark.kwargs.get("reason") or "excluded by @pytest.mark.exclude_backend"
        for backend in marker_backends(mark.args):
            reasons.setdefault(backend, why)
    return reasons


def _directly_parametrized(metafunc: Any, argname: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if argname in names:
            return True
    return False


def _ours(metafunc: Any) -> bool:
    """True when the ``device`` argument resolves to this plugin's fixture."""
    defs = getattr(metafunc, "_arg2fixturedefs", {}).get("device")
    if not defs:
        return False
    func = getattr(defs[-1], "func", None)
    return getattr(func, "__module__", None) == __name__


def pytest_generate_tests(metafunc: Any) -> None:
    if (
        "device" not in metafunc.fixturenames
        or _directly_parametrized(metafunc, "device")
        or not _ours(metafunc)
    ):
        return
    state = _state(metafunc.config)
    required = _marker_names(metafunc.definition, "requires_backend")
    excluded = _exclusion_reasons(metafunc.definition)
    params = []
    for backend in state.selected:
        if required and backend not in required:
            continue
        reason = excluded.get(backend) or state.skip_reason(backend)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(backend, id=backend, marks=marks))
    if not params:
        reason = (
            "; ".join(state.skip_reason(b) or f"backend {b} not selected" for b in required) or "no backend"
        )
        params = [pytest.param(None, id="no-backend", marks=pytest.mark.skip(reason=reason))]
    metafunc.parametrize("device", params, indirect=True)


def pytest_runtest_setup(item: Any) -> None:
    if item.get_closest_marker("requires_backend") is None:
        return
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "device" in callspec.params:
        return  # the parametrisation already applied the marker
    state = _state(item.config)
    required = _marker_names(item, "requires_backend")
    if not any(state.skip_reason(b) is None for b in required):
        pytest.skip("; ".join(state.skip_reason(b) or "" for b in required))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """``@pytest.mark.check_leaks`` in a plain pytest run (``xcompat test`` handles it itself)."""
    marker = item.get_closest_marker("check_leaks")
    if marker is None or getattr(item, "_xcompat_leak_checked", False):
        return (yield)
    from xcompat.isolate.leaks import LeakPolicy, from_marker, measure_leaks

    try:
        kinds, policy = from_marker(marker, (), LeakPolicy())
    except ValueError as exc:
        raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
    original = item.runtest

    def runtest_repeated() -> None:
        original()
        leaked = [r for r in measure_leaks(original, kinds, policy) if r.leaked]
        if leaked:
            pytest.fail("leak: " + "; ".join(r.describe() for r in leaked), pytrace=False)

    item.runtest = runtest_repeated
    try:
        return (yield)
    finally:
        item.runtest = original


@pytest.fixture
def device(request: Any) -> str:
    """torch device string of the backend this case runs on (``cpu``, ``cuda``, ``mps``)."""
    from xcompat.testing.backends import TORCH_DEVICE

    backend = getattr(request, "param", None)
    if backend is None:
        state = _state(request.config)
        usable = [b for b in state.selected if state.skip_reason(b) is None]
        backend = usable[0] if usable else "cpu"
    return TORCH_DEVICE[backend]


@pytest.fixture
def xcompat_backend(request: Any) -> str:
    """The xcompat backend name of this case (``rocm`` where ``device`` says ``cuda``)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("device"):
        return str(callspec.params["device"])
    state = _state(request.config)
    usable = [b for b in state.selected if state.skip_reason(b) is None]
    return usable[0] if usable else "cpu"
