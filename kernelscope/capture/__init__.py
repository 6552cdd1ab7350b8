"""Capturing: the parent-side runner (no torch) and the child that compiles (imports torch).

``kernelscope.capture(fn, *args, out=...)``, the Python API, is this package called: the root package
(kernelscope/__init__.py) makes it callable, so this package names nothing above it. Importing it
imports nothing else.
"""
