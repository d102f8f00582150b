"""The Python interpreters a machine has, and whether a wheel fits one.

* :mod:`.discover`: the interpreters of each version on this machine (pyenv's versions,
  uv-managed Pythons, ``pythonX.Y`` on PATH), each asked once for its version and tags;
* :mod:`.fit`: a wheel's tags against an interpreter's, with an error that names both.
"""
