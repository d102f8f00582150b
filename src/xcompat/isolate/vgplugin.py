"""pytest plugin loaded (``-p xcompat.isolate.vgplugin``) inside a valgrind'd pytest.

Around each test it asks memcheck for an *added* leak check, so leaks from imports and
collection (the baseline) are never reported, and writes ``xcompat-start``/``xcompat-end``
markers into the XML so every error can be attributed to the test it happened in.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import pytest

_CLIENT: Any = None
_path = os.environ.get("XCOMPAT_VALGRIND_CLIENT")
if _path:
    _CLIENT = ctypes.CDLL(_path)
    _CLIENT.xcompat_mark.argtypes = [ctypes.c_char_p]


def _mark(text: str) -> None:
    if _CLIENT is not None:
        _CLIENT.xcompat_mark(text.replace("%", "%%").encode("utf-8", "replace"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    if _CLIENT is None:
        return (yield)
    _CLIENT.xcompat_added_leak_check()  # everything up to here is baseline
    _mark(f"xcompat-start {item.nodeid}")
    try:
        return (yield)
    finally:
        _CLIENT.xcompat_added_leak_check()
        _mark(f"xcompat-end {item.nodeid}")
