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
from collections.abc import Callable, Container

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


def vague_linkage_shape(
    base: str, demangled: str | None = None, is_class: Callable[[list[str]], bool] | None = None
) -> bool:
    """Whether a WEAK C++ symbol has the shape of vague linkage (a copy every user of a header
    carries), judged from its demangled name: this is a heuristic, documented in docs/abi.md.

    In a linked library an inline function, a template instantiation and a function declared
    ``__attribute__((weak))`` are all plain WEAK in ``.dynsym``. Only the first two are emitted
    by every consumer that uses them; a consumer of an explicitly weak function binds to the
    library's definition and fails to load when it is gone. Vague linkage is assumed for:

    * template instantiations (template arguments in the demangled name: ``f<int>(...)``,
      ``Box<T>::get()``, the vtable / typeinfo of ``Box<int>``);
    * lambdas and other closures (``{lambda(...)#1}``), local statics and their guard
      variables (``_ZGV``), thread-local wrappers (``_ZTW`` / ``_ZTH``);
    * typeinfo of non-class types (function and pointer types).

    * members of classes (inline member functions defined in a class body): a const member
      function (``_ZNK``), or a function whose enclosing scope is a class of this library
      (``is_class``, from :func:`class_lookup`: a vtable, typeinfo, default constructor or
      destructor is exported for it).

    A non-template WEAK function at namespace scope (``ns::f(int)``) is treated as interface:
    that is the shape of an explicitly weak definition (a hook meant to be overridden) that
    consumers bind to. An inline free function in a header has the same shape; its finding is
    a false positive a policy ``ignore`` pattern silences.
    """
    if base.startswith(("_ZGV", "_ZTW", "_ZTH", "_ZZ")):
        return True  # guard variables, TLS wrappers, local statics and lambdas of (inline) functions
    if base.startswith(("_ZTI", "_ZTS", "_ZTV")):
        return base[4:5] not in set("0123456789N") or not _class_data_of_plain_class(base)
    text = demangled if demangled is not None else _demangle(base)
    if text == base:  # not demangled (no C++ runtime): keep the old, permissive rule
        return True
    if "<" in _strip_params(text) or "{lambda" in text or "{unnamed type" in text or "::__" in text:
        return True
    if base.startswith("_ZNK"):
        return True  # a const member function
    scope = nested_scope(base)
    return scope is not None and is_class is not None and is_class(scope)


_SOURCE_NAME = re.compile(r"(\d+)")


def _components(mangled: str, start: int) -> tuple[list[str], int] | None:
    """The plain ``<length><identifier>`` components of a nested name from ``start``, and
    where they end; None for anything fancier (templates, substitutions, std::)."""
    out: list[str] = []
    i = start
    while i < len(mangled):
        m = _SOURCE_NAME.match(mangled, i)
        if not m:
            break
        n = int(m.group(1))
        j = m.end()
        if n == 0 or j + n > len(mangled):
            return None
        out.append(mangled[j : j + n])
        i = j + n
    return out, i


def nested_scope(base: str) -> list[str] | None:
    """``_ZN2ns5Shape4areaEv`` -> ``["ns", "Shape"]``: the enclosing scope of a plain nested name."""
    if not base.startswith("_ZN"):
        return None
    i = 3
    while i < len(base) and base[i] in "KVr":
        i += 1
    got = _components(base, i)
    if got is None or len(got[0]) < 2:
        return None
    return got[0][:-1]


def class_lookup(*exports: Container[str]) -> Callable[[list[str]], bool]:
    """A test "is this scope (given as its name components) a class?" against the exports of
    one or more libraries: a vtable, typeinfo, default constructor or destructor is exported
    for it. Each test is a few dict lookups, not a scan of the symbol table."""

    def is_class(components: list[str]) -> bool:
        m = "".join(f"{len(c)}{c}" for c in components)
        nested = f"N{m}E" if len(components) > 1 else m
        keys = (f"_ZTV{nested}", f"_ZTI{nested}", f"_ZTS{nested}", f"_ZN{m}D1Ev", f"_ZN{m}D2Ev", f"_ZN{m}C1Ev",
                f"_ZN{m}C2Ev")
        return any(k in ex for ex in exports for k in keys)

    return is_class


def _demangle(base: str) -> str:
    from xcompat.abi.demangle import demangle

    return demangle(base)


def _strip_params(text: str) -> str:
    """``ns::f<int>(std::vector<int>) const`` -> ``ns::f<int>``: template arguments of the
    parameter list say nothing about the function itself."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and not text.startswith("operator", max(0, i - 8)):
            return text[:i]
    return text


def is_extension_interface(base: str, declared: tuple[str, ...] = ()) -> bool:
    """The interface of a CPython extension module: ``PyInit_*`` plus the symbols the project
    declares (policy ``extension_exports``, glob patterns). Everything else an extension
    exports (statically linked C libraries, leaked C++ helpers, capsule tables such as numpy's
    ``_ARRAY_API``, which are reached through a capsule, not by the loader) is informational."""
    if base.startswith("PyInit_"):
        return True
    if declared:
        import fnmatch

        return any(fnmatch.fnmatchcase(base, pat) for pat in declared)
    return False


_ARCH_DIRS = frozenset({"x86_64", "aarch64", "i686", "armv7l", "ppc64le", "s390x", "riscv64", "arm64", "universal2"})


def default_extension_exports(key: str) -> tuple[str, ...]:
    """The C API an extension module is assumed to declare when the project says nothing:
    symbols named after its package, ``<first word of the top-level package>_*``
    (``sample_ext/_core.so`` -> ``sample_*``), the usual naming of a deliberate C API. Symbols
    of statically linked C libraries (libxml2's ``xml*`` in lxml) do not match it."""
    parts = [p for p in key.split("/") if p]
    if len(parts) > 1 and parts[0] in _ARCH_DIRS:
        parts = parts[1:]
    top = parts[0] if len(parts) > 1 else parts[0].split(".", 1)[0]
    word = next((w for w in top.lower().replace("-", "_").split("_") if w), "")
    return (f"{word}_*",) if len(word) >= 3 and word.isidentifier() else ()


def classify(
    name: str, lib: LibraryInterface, *, extension: bool, weak: bool = False, declared: tuple[str, ...] = (),
    is_class: Callable[[list[str]], bool] | None = None,
    origin: Callable[[str], str | None] | None = None,
) -> str | None:
    """Return why ``name`` is noise or None.

    Reasons: ``linker``, ``version-node``, ``stdlib``, ``extension-internal`` and
    ``vague-linkage`` (a WEAK / GNU-unique C++ symbol whose demangled shape is that of an
    inline function or template instantiation: see :func:`vague_linkage_shape`)."""
    base, _, ver = name.partition("@")
    if base in LINKER_SYMBOLS:
        return "linker"
    if ver and base == ver:
        return "version-node"  # the absolute symbol the linker emits for each version node
    if is_stdlib_symbol(base):
        return "stdlib"
    if extension and not is_extension_interface(base, declared):
        return "extension-internal"
    if weak and is_mangled(base):
        # DWARF, when the library has it, says where the function is defined: a header
        # (every consumer has a copy) or the library's own source (consumers bind to it)
        where = origin(base) if origin is not None else None
        if where == "header":
            return "vague-linkage"
        if where is None and vague_linkage_shape(base, is_class=is_class or class_lookup(lib.exports)):
            return "vague-linkage"
    return None
