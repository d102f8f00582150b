from xcompat.cli import run

run()
