"""Isolated test execution: a warm parent forks one process per test (or per file).

Public entry points (imported lazily so ``xcompat --help`` stays fast)::

    from xcompat.isolate.session import RunOptions, run_tests
    from xcompat.isolate.writers import write_json_result, write_junit
    from xcompat.isolate.sanitizers import parse_valgrind_xml, parse_compute_sanitizer, dedupe
"""
