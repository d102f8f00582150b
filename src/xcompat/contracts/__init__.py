"""Contract checks of a built project: what its files promise against what it does.

Three checks, each a question of its own:

* ``python_floor``: do the project's own Python sources run on the lowest Python it claims
  (``Requires-Python``) and the lowest one the matrix tests? (vermin, :mod:`.vermin_run`)
* ``stubs``: do the ``.pyi`` stubs a wheel ships describe its runtime modules of the same
  version? (mypy's stubtest, :mod:`.stubtest_run`)
* ``libraries``: which shared objects does an importing process map, who owns each, and
  does the process hold two copies of one runtime or a library from an unexpected place?
  (``/proc/<pid>/maps``, :mod:`.maps`)

Each check returns a versioned result document (:mod:`.result`) with one ``code`` per
finding kind; the commands under ``xcompat contracts`` write and gate on them.
"""
