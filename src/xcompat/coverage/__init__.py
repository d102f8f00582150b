"""Merged coverage across matrix cells: Python (coverage.py, Cython plugin) and native (gcov via gcovr).

* :func:`xcompat.coverage.collect.collect` gathers one cell's data under repository paths
  (:class:`xcompat.coverage.paths.PathMapper` maps build trees, containers and site-packages back);
* :func:`xcompat.coverage.report.merge_coverage` merges cell artifacts into one JSON document,
  Cobertura XML and Markdown, with diff coverage (:func:`xcompat.coverage.diff.changed_lines`)
  and threshold checks (:mod:`xcompat.coverage.thresholds`).

Outputs: ``schemas/coverage-cell.schema.json`` (per cell) and ``schemas/coverage.schema.json``
(merged), both with the common stage envelope ``kind: "coverage"``.
"""
