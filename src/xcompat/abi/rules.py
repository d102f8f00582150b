"""Finding kinds and the version bump each one requires, as data (``rules.json``).

A project overrides the defaults with a policy: a mapping ``kind -> bump`` given with
``--policy FILE`` (JSON or YAML) or taken from the matrix's ABI policy. A policy may also be
``{"rules": {kind: bump}, "ignore": ["glob on symbol or library", ...], "extension_exports":
["glob", ...]}``; ``ignore`` patterns match a versioned symbol ``sym@VER`` by its full key or
by its base name; ``extension_exports`` names the symbols of extension modules, besides
``PyInit_*``, that other binaries link against.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

# The one Bump and bump order of xcompat (xcompat.results.status).
from xcompat.results.status import BUMP_ORDER as BUMPS
from xcompat.results.status import Bump

BUMP_RANK = {b: i for i, b in enumerate(BUMPS)}


class PolicyError(ValueError):
    pass


@cache
def default_rules() -> dict[str, Bump]:
    data = json.loads((Path(__file__).parent / "rules.json").read_text(encoding="utf-8"))
    rules = data["rules"]
    for kind, bump in rules.items():
        if bump not in BUMP_RANK:  # the shipped table is data: check it like user input
            raise PolicyError(f"rules.json: kind {kind!r} has unknown bump {bump!r}")
    return dict(rules)


def worst(bumps: Iterable[Bump]) -> Bump:
    best: Bump = "none"
    for b in bumps:
        if BUMP_RANK[b] > BUMP_RANK[best]:
            best = b
    return best


class Policy(NamedTuple):  # not a dataclass: see xcompat.abi.binary.SlotRecord
    rules: Mapping[str, Bump]
    ignore: tuple[str, ...] = ()
    # finding kinds that fail the check; None: every kind at or above the fail-on bump
    gate: frozenset[str] | None = None
    # symbols of CPython extension modules that are interface besides PyInit_* (globs);
    # None: the default convention (see noise.default_extension_exports)
    extension_exports: tuple[str, ...] | None = None

    def bump(self, kind: str) -> Bump:
        return self.rules.get(kind, "major")

    def ignored(self, library: str | None, symbol: str | None) -> bool:
        base = symbol.partition("@")[0] if symbol else None
        for pattern in self.ignore:
            # "sym@VER" keys match a pattern for the versioned name or for the base name
            if symbol and (fnmatch.fnmatchcase(symbol, pattern) or fnmatch.fnmatchcase(base or "", pattern)):
                return True
            if library and fnmatch.fnmatchcase(library, pattern):
                return True
        return False


_STRUCTURED = {"rules", "ignore", "version", "bumps", "gate", "baseline", "extension_exports"}


def make_policy(overrides: Mapping[str, Any] | None = None, *, source: str = "<policy>") -> Policy:
    """Defaults, updated with ``overrides`` (a plain mapping); unknown kinds and bumps are refused."""
    rules = dict(default_rules())
    if not overrides:
        return Policy(rules)
    if not isinstance(overrides, Mapping):
        raise PolicyError(f"{source}: an ABI policy must be a mapping of finding kind to bump")
    if set(overrides) & (_STRUCTURED - {"version"}):
        table, ignore, gate, extension_exports = _structured(overrides, set(rules), source)
    else:
        table, ignore, gate, extension_exports = overrides, [], None, None
    if not isinstance(table, Mapping):
        raise PolicyError(f"{source}: 'rules' must be a mapping of finding kind to bump")
    for kind, bump in table.items():
        if kind not in rules:
            import difflib

            near = difflib.get_close_matches(str(kind), rules, n=1)
            hint = f"; perhaps you meant {near[0]!r}?" if near else ""
            raise PolicyError(f"{source}: unknown finding kind {kind!r}{hint}")
        if bump not in BUMP_RANK:
            raise PolicyError(f"{source}: kind {kind!r}: bump must be one of {', '.join(BUMPS)}, not {bump!r}")
        rules[str(kind)] = bump
    return Policy(rules, tuple(ignore), gate, extension_exports)


def _structured(
    overrides: Mapping[str, Any], kinds: set[str], source: str
) -> tuple[Mapping[str, Any], list[str], frozenset[str] | None, tuple[str, ...] | None]:
    """(rules table, ignore patterns, gate kinds, extension exports) of a policy given with keys
    (``rules`` or ``bumps``, ``ignore``, ``gate``, ``extension_exports``); ``kinds``: the known
    finding kinds."""
    extra = set(overrides) - _STRUCTURED
    if extra:
        raise PolicyError(
            f"{source}: unknown key(s) {sorted(extra)}; expected 'rules' (or 'bumps'), 'ignore', 'gate' "
            "and 'extension_exports'"
        )
    # 'bumps' / 'gate' / 'baseline' is the shape of the test matrix's abi: section
    bumps, explicit = overrides.get("bumps") or {}, overrides.get("rules") or {}
    if not isinstance(bumps, Mapping) or not isinstance(explicit, Mapping):
        raise PolicyError(f"{source}: 'rules' / 'bumps' must be a mapping of finding kind to bump")
    gate: frozenset[str] | None = None
    raw_gate = overrides.get("gate")
    if raw_gate is not None:
        if not isinstance(raw_gate, (list, tuple, set, frozenset)) or not all(isinstance(k, str) for k in raw_gate):
            raise PolicyError(f"{source}: 'gate' must be a list of finding kinds")
        unknown = sorted(set(raw_gate) - kinds)
        if unknown:
            raise PolicyError(f"{source}: 'gate' names unknown finding kind(s) {unknown}")
        gate = frozenset(raw_gate)
    raw_ignore = overrides.get("ignore") or []
    if not isinstance(raw_ignore, list) or not all(isinstance(p, str) for p in raw_ignore):
        raise PolicyError(f"{source}: 'ignore' must be a list of glob patterns (strings)")
    extension_exports: tuple[str, ...] | None = None
    raw_ext = overrides.get("extension_exports")
    if raw_ext is not None:
        if not isinstance(raw_ext, list) or not all(isinstance(p, str) for p in raw_ext):
            raise PolicyError(f"{source}: 'extension_exports' must be a list of glob patterns (strings)")
        extension_exports = tuple(raw_ext)
    return {**bumps, **explicit}, list(raw_ignore), gate, extension_exports


def load_policy_file(path: str | Path) -> Policy:
    from xcompat.errors import InputError
    from xcompat.jsonio import loads_bounded
    from xcompat.limits import LIMITS, read_bounded_text

    path = Path(path)
    try:  # bounded (xcompat.limits); YAML through the strict loader: no aliases, no duplicate keys
        text = read_bounded_text(path, what="policy file", limit=LIMITS.trust_file_bytes)
        if path.suffix == ".json":
            data = loads_bounded(text, source=path)
        else:
            from xcompat.matrix.yamlload import load_yaml

            data = load_yaml(text, source=str(path)).data
    except InputError as exc:
        if exc.message.startswith("YAML syntax error: "):
            raise PolicyError(f"{exc.location()}: invalid YAML: {exc.message.removeprefix('YAML syntax error: ')}") from None
        raise PolicyError(str(exc)) from None
    return make_policy(data, source=str(path))
