from xcompat.cli import run

raise SystemExit(run())
