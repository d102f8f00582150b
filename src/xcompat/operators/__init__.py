"""The project's own PyTorch operators, checked on each device from samples it declares.

``discovery`` finds the operators a wheel registers and the dispatch keys each has a kernel
for; ``samples`` reads ``.xcompat/operators.py``; ``cases`` derives the edge cases of each
sample; ``compare`` and ``checks`` decide; ``child`` runs all of it in an isolated process
and ``runner`` starts it; ``document`` gives the result its status and summary.
"""

from __future__ import annotations

from xcompat.operators.runner import run_operators

__all__ = ["run_operators"]
