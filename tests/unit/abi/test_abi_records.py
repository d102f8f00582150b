"""The records of the ABI diff: plain slotted classes and NamedTuples that behave as the
dataclasses they replace did (equality, repr, defaults not shared, pickling for the two
reading processes, immutability of the frozen ones)."""

from __future__ import annotations

import pickle

import pytest

from xcompat.abi.binary import Exports, LibraryInterface
from xcompat.abi.binding import Definition
from xcompat.abi.diff import Finding
from xcompat.abi.manifest import Manifest


def _lib(**kw) -> LibraryInterface:
    return LibraryInterface(path="libx.so", format="elf", arch="x86_64", **kw)


def test_library_interfaces_compare_by_every_field():
    a, b = _lib(), _lib()
    assert a == b and not (a != b)
    b.exports["f"] = ("f", 0)
    assert a != b
    assert a.exports == {}  # mutable defaults are not shared between instances
    assert _lib(soname="libx.so.1") != _lib(soname="libx.so.2")
    assert a != ("libx.so", "elf", "x86_64")
    with pytest.raises(TypeError):
        hash(a)  # mutable: not hashable, as the dataclass was not
    assert repr(_lib(soname="libx.so.1")).startswith("LibraryInterface(path='libx.so', format='elf', arch='x86_64', "
                                                      "soname='libx.so.1',")


def test_records_survive_pickling_between_processes():
    lib = _lib(exports={"f": ("f", 0), "o": ("o", 8)}, hidden_versions=frozenset({"f@V1"}))
    lib.object_sizes  # fills the private cache, which travels too
    m = Manifest(source="x.whl", kind="wheel", name="x", libraries={"libx.so": lib})
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.libraries["libx.so"].object_sizes == {"o": 8}
    with pytest.raises(AttributeError):
        m.no_such_field = 1  # type: ignore[attr-defined]


def test_frozen_records_stay_frozen_and_replace_makes_a_new_one():
    f = Finding(kind="symbol_removed", library="libx.so", symbol="_Z1fv", demangled="f()", required_bump="major",
                detail="gone")
    with pytest.raises(AttributeError):
        f.kind = "other"  # type: ignore[misc]
    g = f._replace(required_bump="minor")
    assert (f.required_bump, g.required_bump, g.symbol) == ("major", "minor", "_Z1fv")
    assert f.old is None and f.to_dict()["symbol"] == "_Z1fv"
    d = Definition(key="f@V1", version="V1", hidden=False, type_char="f", size=0)
    assert {d: 1}[Definition(key="f@V1", version="V1", hidden=False, type_char="f", size=0)] == 1


def _exports() -> Exports:
    return Exports({"f": "f", "tbl@V1": "o", "g": "W"}, {"tbl@V1": 24})


def test_exports_read_as_a_mapping_of_type_and_size():
    e = _exports()
    assert e["f"] == ("f", 0) and e["tbl@V1"] == ("o", 24)  # only data objects keep a size
    assert len(e) == 3 and list(e) == ["f", "tbl@V1", "g"] and "g" in e and "h" not in e
    assert dict(e.items()) == {"f": ("f", 0), "tbl@V1": ("o", 24), "g": ("W", 0)}
    assert list(e.values()) == [("f", 0), ("o", 24), ("W", 0)]
    assert ("tbl@V1", ("o", 24)) in e.items() and ("tbl@V1", ("o", 8)) not in e.items()
    assert e.get("tbl@V1") == ("o", 24) and e.get("h") is None and e.get("h", ("?", 1)) == ("?", 1)
    with pytest.raises(KeyError):
        e["h"]
    # the keys are the dict's own view: set operations between two libraries stay in C
    assert type(e.keys()) is type({}.keys())
    assert e.keys() ^ Exports({"f": "f", "new": "f"}, {}).keys() == {"tbl@V1", "g", "new"}


def test_exports_compare_with_exports_and_with_plain_mappings():
    assert _exports() == _exports()
    assert _exports() == {"f": ("f", 0), "tbl@V1": ("o", 24), "g": ("W", 0)}
    assert _exports() != Exports({"f": "f", "tbl@V1": "o", "g": "W"}, {"tbl@V1": 32})  # object grew
    assert _exports() != Exports({"f": "F", "tbl@V1": "o", "g": "W"}, {"tbl@V1": 24})  # binding changed
    assert _exports() != {"f": ("f", 0)} and _exports() != ["f"]
    with pytest.raises(TypeError):
        hash(_exports())
    assert repr(Exports({"f": "f"}, {})) == "Exports({'f': ('f', 0)})"
    assert _lib(exports=_exports()) == _lib(exports=_exports())
    assert _lib(exports=_exports()) != _lib(exports=Exports({"f": "f"}, {}))


def test_exports_survive_pickling_and_feed_the_object_sizes():
    lib = _lib(exports=_exports())
    back = pickle.loads(pickle.dumps(lib))
    assert isinstance(back.exports, Exports) and back == lib
    assert back.object_sizes == {"tbl@V1": 24}  # derived from the exports when the reader did not fill it
