"""pytest plugin registered through the ``pytest11`` entry point. Must stay cheap to import (no torch at import time)."""
