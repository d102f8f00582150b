"""Inputs generated from an operator's schema, for an operator without declared samples.

Only a schema whose required arguments are all ``Tensor``, ``float``, ``int`` or ``bool``
gets them: every tensor is the same small float32 matrix shape (so elementwise operators
agree), numbers are small. Arguments with a default keep it. Anything else (lists,
optional tensors, strings, scalar types) cannot be guessed, and the operator stays "not
exercised".
"""

from __future__ import annotations

from typing import Any

import torch

SHAPE = (4, 3)


def schema_sample(name: str, overload: str) -> tuple[Any, ...] | None:
    """One argument tuple for ``name`` ("ns::op") from its schema; None when it cannot be guessed."""
    try:
        schema = torch._C._get_schema(name, overload)
    except RuntimeError:
        return None
    generator = torch.Generator().manual_seed(0)
    args: list[Any] = []
    for argument in schema.arguments:
        if argument.has_default_value():
            break  # this and the rest take their defaults
        kind = str(argument.type)
        if argument.kwarg_only:
            return None
        if kind == "Tensor":
            args.append(torch.randn(*SHAPE, generator=generator))
        elif kind == "float":
            args.append(0.5)
        elif kind == "int":
            args.append(1)
        elif kind == "bool":
            args.append(False)
        else:
            return None
    if not any(isinstance(a, torch.Tensor) for a in args):
        return None
    return tuple(args)
