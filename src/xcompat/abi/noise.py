"""What is not part of a library's interface, so that a diff does not call it a break.

Three sources of noise dominate real diffs (measured on numpy, pyzmq and torch releases):

* linker-defined symbols (``_init``, ``_fini``, ``__bss_start``, ``_edata``, ``_end``) that
  appear or vanish with a toolchain or with ``patchelf``;
* libstdc++ / libgcc code and template instantiations that leak into ``.dynsym`` from
  headers (``std::``, ``__gnu_cxx::``, their typeinfo and vtables);
* weak C++ symbols (vague linkage): inline functions and template instantiations that
  headers emit into every object using them (torch's ``c10::impl::make_boxed_from_unboxed_functor``);
* libraries grafted by auditwheel / delocate (``foo-1a2b3c4d.so``): private to the wheel,
  nothing outside it can link against them.

For a CPython extension module the surface is ``PyInit_*`` plus deliberately exported
unmangled C functions; mangled C++ symbols in an extension module are implementation.
"""

from __future__ import annotations

import re

from xcompat.abi.binary import LibraryInterface

LINKER_SYMBOLS = frozenset(
    {
        "_init",
        "_fini",
        "__bss_start",
        "_edata",
        "_end",
        "__end__",
        "_DYNAMIC",
        "_GLOBAL_OFFSET_TABLE_",
        "__data_start",
        "data_start",
        "__dso_handle",
        "_IO_stdin_used",
        "__libc_csu_init",
        "__libc_csu_fini",
        "__gmon_start__",
        "_ITM_registerTMCloneTable",
        "_ITM_deregisterTMCloneTable",
        "__TMC_END__",
        "_mh_dylib_header",
        "_mh_execute_header",
    }
)

# Mangled prefixes of the C++ standard library and GCC's extensions: std::, std::__cxx11,
# the std:: abbreviations (Ss, Sa, Si, So, Sd), __gnu_cxx::, plus their vtables (TV),
# typeinfo (TI), typeinfo names (TS) and guard variables (GV).
_STDLIB = re.compile(r"^_Z(?:T[VIS]|GV|TH|TW)?N?K?(?:St|S[saiod]|9__gnu_cxx|NSt|N9__gnu_cxx)")
_STD_OPERATORS = re.compile(r"^_Z(?:(?:nw|na)[jmy]|(?:dl|da)Pv)")  # operator new/delete replacements


# auditwheel / delocate rename grafted libraries to "<name>-<8 hex digits>.so[.version]".
_HASHED = re.compile(r"^(?P<stem>.+?)-(?P<hash>[0-9a-f]{8})(?P<ext>\.so(?:\.[0-9.]+)?|(?:\.[0-9.]+)?\.dylib)$")


def unhashed_name(name: str) -> str:
    """``libzmq-56587b1b.so.5.2.5`` -> ``libzmq.so.5.2.5``; other names unchanged."""
    m = _HASHED.match(name)
    return f"{m.group('stem')}{m.group('ext')}" if m else name


def is_linker_symbol(name: str) -> bool:
    return name in LINKER_SYMBOLS


def is_stdlib_symbol(name: str) -> bool:
    return bool(_STDLIB.match(name) or _STD_OPERATORS.match(name))


def is_mangled(name: str) -> bool:
    return name.startswith("_Z")


def is_grafted(key: str) -> bool:
    """A library auditwheel / delocate copied into ``<pkg>.libs`` / ``.dylibs`` under a hashed name."""
    head, _, _base = key.rpartition("/")
    top = head.split("/", 1)[0]
    return top.endswith(".libs") or head.endswith(".dylibs")


def _class_data_of_plain_class(base: str) -> bool:
    """Vtables and typeinfo are always weak in GCC output, even for a class with a key
    function; those of a non-template class are part of the library's interface."""
    if not base.startswith(("_ZTV", "_ZTI", "_ZTS")) or base[4:5] not in set("0123456789N"):
        return False  # typeinfo of function, pointer or builtin types is vague linkage too
    from xcompat.abi.demangle import demangle

    return "<" not in demangle(base)


def classify(name: str, lib: LibraryInterface, *, extension: bool, weak: bool = False) -> str | None:
    """Return why ``name`` is noise or None.

    Reasons: ``linker``, ``version-node``, ``stdlib``, ``extension-internal`` and
    ``vague-linkage``: a weak (or GNU-unique) C++ symbol is an inline function or template
    instantiation emitted from a header; every user of that header carries its own copy,
    so it appearing or vanishing breaks nobody."""
    base, _, ver = name.partition("@")
    if base in LINKER_SYMBOLS:
        return "linker"
    if ver and base == ver:
        return "version-node"  # the absolute symbol the linker emits for each version node
    if is_stdlib_symbol(base):
        return "stdlib"
    if weak and is_mangled(base) and not _class_data_of_plain_class(base):
        return "vague-linkage"
    if extension and not (base.startswith("PyInit_") or (not is_mangled(base) and not base.startswith("_"))):
        return "extension-internal"
    return None
