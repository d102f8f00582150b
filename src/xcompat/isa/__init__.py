"""The ISA floor: which instructions a binary uses above the CPU level its wheel promises.

* :mod:`.levels`: the levels of each architecture, in order, and which instruction groups
  need which level (``levels.json``, rules as data);
* :mod:`.scan`: disassembles each function of a shared object (capstone) and lists, per
  function, the instructions above a floor, and whether the object asks the CPU for its
  features (a dispatched wide path) or not (a wide path that faults on a floor CPU).
"""
