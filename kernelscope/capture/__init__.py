"""Capturing: the parent-side runner (no torch) and the child that compiles (imports torch).

This package is also the API's ``kernelscope.capture(fn, *args, out=...)``: the attribute
``kernelscope.capture`` is this package as soon as any of its modules is imported, so the package
itself is made callable (a module subclass with ``__call__``, set below) and calls
``kernelscope.api.capture``. Importing it imports nothing else.
"""

import importlib
import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, fn, *args, **kwargs):
        """``kernelscope.capture(fn, *args, out=..., **capture_options)``: see kernelscope.api.capture."""
        # By name: the API sits above this package (it prints with kernelscope.show); a static import
        # here would point the layers upward.
        return importlib.import_module("kernelscope.api").capture(fn, *args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
