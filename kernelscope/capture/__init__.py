"""Capturing: the parent-side runner (no torch) and the child that compiles (imports torch)."""
