"""xcompat: cross-architecture compatibility CI for Python packages with native extensions."""

__version__ = "0.1.0"
