"""Start-up: the small functions dataclasses and named tuples generate, kept compiled from one start to the next.

Checked against CPython 3.11.7 and 3.12 (``dataclasses._create_fn`` runs each generated method's source with
``exec(text, globals, ns)``; ``collections.namedtuple`` makes ``__new__`` with ``eval(text, namespace)``; both
look the name up in their module's globals, then the builtins). On only where both modules have those calls
and no ``exec`` / ``eval`` of their own; anywhere else, or with ``KERNELSCOPE_KEPT_CODE=0``, nothing changes.

Opening a bundle makes ~66 dataclasses and ~60 named tuples as Textual, rich and kernelscope load: ~280 small
sources parsed and compiled, ~150 M machine instructions, a twelfth of the start. Here, from ``install()``
(before Textual is imported) to ``release()`` (after the first frame), those two modules' ``exec`` and ``eval``
take the code object compiled for the same source text from what an earlier start kept, compiling only what is
new (``compile(text, "<string>", mode, dont_inherit=True)``: what the builtins compile for them, since neither
module has a ``__future__`` import). The source text is the key, so the function made is the one Python would
have made. What was compiled anew is written after the first frame to
``<cache>/startup-code-<cache tag>.marshal`` (marshal, as Python's own ``__pycache__`` files are), atomically,
mode 0600. A file that is not the user's own, over MAX_BYTES, of another Python, or not what we wrote is ignored.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import marshal
import os
import sys
from pathlib import Path
from types import CodeType

ENV = "KERNELSCOPE_KEPT_CODE"  # "0" (or off/false/no): compile as usual
MAX_BYTES = 2 << 20
MAX_ENTRIES = 2000  # sources kept (an explorer start compiles ~280; the gallery's and other screens' add few)

# Where the code was checked (see the docstring): a module, the builtin it calls by name, the mode of its text.
_HOOKS = ((dataclasses, "exec", "exec"), (collections, "eval", "eval"))
_HEADER = ("kernelscope-kept-code", 1, sys.implementation.cache_tag, sys.version)

_state: dict = {"installed": False, "entries": {}, "used": set(), "new": False}


def cache_file() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / f"startup-code-{sys.implementation.cache_tag}.marshal"


def _calls(module, name: str) -> bool:
    """Whether a function of ``module`` calls the builtin ``name`` by its global name."""
    return any(isinstance(f, type(_calls)) and f.__module__ == module.__name__ and name in f.__code__.co_names
               for f in vars(module).values())


def supported() -> bool:
    """Whether this Python makes its generated code as checked (the docstring)."""
    if sys.implementation.cache_tag is None or sys.version_info[:2] not in ((3, 11), (3, 12)):
        return False
    return all(_calls(module, name) for module, name, _ in _HOOKS)


def _applies() -> bool:
    if os.environ.get(ENV, "").strip().lower() in ("0", "off", "false", "no") or not supported():
        return False
    return all(name not in vars(module) for module, name, _ in _HOOKS)  # nobody else's exec / eval there


def _compiled(text: str, mode: str) -> CodeType:
    entries = _state["entries"]
    key = (mode, text)
    code = entries.get(key)
    if code is None:
        code = compile(text, "<string>", mode, dont_inherit=True)
        entries[key] = code
        _state["new"] = True
    _state["used"].add(key)
    return code


def _exec(source, globals=None, locals=None, /, **kwargs):
    if globals is None:  # the caller's namespace, as the builtin takes it (neither module calls it so)
        caller = sys._getframe(1)
        globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
    if type(source) is str and not kwargs:
        source = _compiled(source, "exec")
    return builtins.exec(source, globals, locals, **kwargs)


def _eval(source, globals=None, locals=None, /):
    if globals is None:
        caller = sys._getframe(1)
        globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
    if type(source) is str:
        source = _compiled(source.lstrip(" \t"), "eval")  # eval of a str skips leading blanks
    return builtins.eval(source, globals, locals)


_SHADOWS = {"exec": _exec, "eval": _eval}


def _read(path: Path) -> dict:
    """The kept code in ``path``: {} where it is absent, not the user's own, too big or not what we wrote."""
    from kernelscope.safefile import open_regular

    try:
        with open_regular(path) as f:  # a FIFO put there would not block the start
            info = os.fstat(f.fileno())
            if info.st_size > MAX_BYTES or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
                return {}
            data = marshal.loads(f.read(MAX_BYTES + 1))
    except Exception:  # absent, unreadable or damaged: compile as usual
        return {}
    if not (isinstance(data, tuple) and len(data) == 2 and data[0] == _HEADER and isinstance(data[1], dict)):
        return {}
    entries = data[1]
    if len(entries) > MAX_ENTRIES or not all(
            isinstance(key, tuple) and len(key) == 2 and key[0] in ("exec", "eval") and isinstance(key[1], str)
            and type(code) is CodeType and code.co_filename == "<string>" for key, code in entries.items()):
        return {}
    return entries


def install() -> None:
    """Take generated code from what was kept, until ``release()`` (once per process)."""
    if _state["installed"] or not _applies():
        return
    _state["entries"] = _read(cache_file())
    for module, name, _ in _HOOKS:
        setattr(module, name, _SHADOWS[name])
    _state["installed"] = True


def release() -> None:
    """Give dataclasses and namedtuple their builtins back; keep what this start compiled anew for the next."""
    if not _state["installed"]:
        return
    for module, name, _ in _HOOKS:
        if vars(module).get(name) is _SHADOWS[name]:
            delattr(module, name)
    _state["installed"] = False
    if not _state["new"]:
        return
    entries = _state["entries"]
    if len(entries) > MAX_ENTRIES:  # sources of other starts drop out first
        entries = {key: code for key, code in entries.items() if key in _state["used"]}
    try:
        blob = marshal.dumps((_HEADER, entries))
        if len(blob) > MAX_BYTES:
            return
        from kernelscope.safefile import write_atomic

        path = cache_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, blob, mode=0o600)
    except Exception:  # a read-only or full cache folder: the next start compiles again, nothing else
        return
    finally:
        _state["entries"], _state["used"], _state["new"] = {}, set(), False
