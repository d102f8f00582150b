"""Warnings forwarded from a test process to the parent (``xcompat.isolate.wire``)."""

from __future__ import annotations

import json
import os
import warnings

import pytest

from xcompat.isolate.wire import WARNING_TEXT_LIMIT, warning_from_wire, warning_to_wire


class NeedsTwoArguments(UserWarning):
    def __init__(self, text: str, code: int) -> None:
        super().__init__(text, code)


def _recorded(text: str, category: type[Warning]) -> warnings.WarningMessage:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn(text, category, stacklevel=1)
    return caught[0]


@pytest.mark.parametrize("category", [UserWarning, DeprecationWarning, pytest.PytestWarning])
def test_a_warning_comes_back_with_its_class_text_and_place(category: type[Warning]) -> None:
    sent = _recorded("careful now", category)
    back = warning_from_wire(json.loads(json.dumps(warning_to_wire(sent))))
    assert back.category is category
    assert isinstance(back.message, category) and str(back.message) == "careful now"
    assert (back.filename, back.lineno) == (sent.filename, sent.lineno)
    assert warnings.formatwarning(str(back.message), back.category, back.filename, back.lineno, "") == \
        warnings.formatwarning(str(sent.message), sent.category, sent.filename, sent.lineno, "")


def test_a_class_the_parent_has_not_imported_reads_the_same_without_an_import() -> None:
    data = {"text": "x", "category": ["no_such_module_here", "Outer.FancyWarning"], "filename": "f.py", "lineno": 3}
    back = warning_from_wire(data)
    assert back.category.__name__ == "FancyWarning" and issubclass(back.category, Warning)
    assert "no_such_module_here" not in __import__("sys").modules


def test_a_name_that_is_not_a_warning_class_is_never_used() -> None:
    back = warning_from_wire({"text": "x", "category": ["os", "system"], "filename": "f.py", "lineno": 1})
    assert back.category is not os.system and issubclass(back.category, Warning)
    assert back.category.__name__ == "system"
    odd = warning_from_wire({"text": "x", "category": ["m", "not an identifier!"], "filename": "f", "lineno": 1})
    assert odd.category.__name__ == "Warning" and issubclass(odd.category, Warning)


def test_a_class_whose_constructor_wants_more_arguments_gets_a_stand_in() -> None:
    sent = warnings.WarningMessage(NeedsTwoArguments("bad", 7), NeedsTwoArguments, "f.py", 9)
    back = warning_from_wire(warning_to_wire(sent))
    assert back.category.__name__ == "NeedsTwoArguments" and back.category is not NeedsTwoArguments
    assert str(back.message) == "('bad', 7)"


@pytest.mark.parametrize(
    "data",
    [{}, {"category": None}, {"category": ["only-module"]}, {"lineno": "seven"}, {"lineno": None},
     {"text": 12, "filename": None}],
)
def test_malformed_messages_still_give_a_warning(data: dict) -> None:
    back = warning_from_wire(data)
    assert issubclass(back.category, Warning) and isinstance(back.lineno, int)


def test_the_text_is_cut_both_ways() -> None:
    sent = _recorded("x" * (WARNING_TEXT_LIMIT * 3), UserWarning)
    wire = warning_to_wire(sent)
    assert len(wire["text"]) == WARNING_TEXT_LIMIT
    assert len(str(warning_from_wire({**wire, "text": "y" * (WARNING_TEXT_LIMIT * 2)}).message)) == WARNING_TEXT_LIMIT


def test_a_module_level_getattr_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module with a PEP 562 ``__getattr__`` (lazy imports) is looked at, not asked."""
    import types

    lazy = types.ModuleType("lazy_module_for_test")
    asked: list[str] = []

    def __getattr__(name: str) -> type[Warning]:
        asked.append(name)
        return UserWarning

    lazy.__getattr__ = __getattr__  # type: ignore[method-assign]
    monkeypatch.setitem(__import__("sys").modules, "lazy_module_for_test", lazy)
    back = warning_from_wire({"text": "x", "category": ["lazy_module_for_test", "LazyWarning"], "filename": "f",
                              "lineno": 1})
    assert asked == [] and back.category is not UserWarning and back.category.__name__ == "LazyWarning"
