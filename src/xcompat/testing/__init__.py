"""Helpers for testing native extensions on every device backend (pytest plugin, strategies, reference checks)."""
