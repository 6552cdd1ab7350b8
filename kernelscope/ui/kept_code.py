"""Start-up: what dataclasses, named tuples and regular expressions compile, kept from one start to the next.

Checked against CPython 3.11.7 and 3.12 (``dataclasses._create_fn`` runs each generated method's source with
``exec(text, globals, ns)``; ``collections.namedtuple`` makes ``__new__`` with ``eval(text, namespace)``; both
look the name up in their module's globals, then the builtins; ``re._compile`` compiles a pattern it has not
cached with ``re._compiler.compile``, which parses it, generates its code and hands both to ``_sre.compile``).
On only where those modules have those calls and no ``exec`` / ``eval`` of their own; anywhere else, or with
``KERNELSCOPE_KEPT_CODE=0``, nothing changes.

Opening a bundle makes ~66 dataclasses and ~60 named tuples as Textual, rich and kernelscope load: ~280 small
sources parsed and compiled, ~150 M machine instructions, a twelfth of the start. Here, from ``install()``
(before Textual is imported) to ``release()`` (after the first frame), those two modules' ``exec`` and ``eval``
take the code object compiled for the same source text from what an earlier start kept, compiling only what is
new (``compile(text, "<string>", mode, dont_inherit=True)``: what the builtins compile for them, since neither
module has a ``__future__`` import). The source text is the key, so the function made is the one Python would
have made. What was compiled anew is written after the first frame to
``<cache>/startup-code-<cache tag>.marshal`` (marshal, as Python's own ``__pycache__`` files are), atomically,
mode 0600. A file that is not the user's own, over MAX_BYTES, of another Python, or not what we wrote is ignored.

Regular expressions the same way: the ~85 patterns Textual, rich and kernelscope compile as they load took
~11 ms of a ~210 ms start in re's pure-Python parser and code generator. ``re._compiler.compile`` is replaced
over the same span by one that, for a pattern and flags met before, hands ``_sre.compile`` the flags, code and
group tables kept for them (``_sre`` checks the code it is given and refuses code it cannot run; a refusal
here compiles the pattern as usual), and otherwise does what ``re._compiler.compile`` does, keeping those
for the next start. The file holds ``_sre.MAGIC``: another engine's code is never read.
"""

from __future__ import annotations

import _sre
import builtins
import collections
import dataclasses
import marshal
import os
import re
import sys
from pathlib import Path
from types import CodeType

from kernelscope.safefile import read_private, write_private

ENV = "KERNELSCOPE_KEPT_CODE"  # "0" (or off/false/no): compile as usual
MAX_BYTES = 2 << 20
MAX_ENTRIES = 3000  # sources and patterns kept (an explorer start compiles ~280 and ~85; other screens add few)

# Where the code was checked (see the docstring): a module, the builtin it calls by name, the mode of its text.
_HOOKS = ((dataclasses, "exec", "exec"), (collections, "eval", "eval"))
_HEADER = ("kernelscope-kept-code", 2, sys.implementation.cache_tag, sys.version, _sre.MAGIC)
_compiler = re._compiler
_RE_COMPILE = _compiler.compile  # Python's own

_state: dict = {"installed": False, "entries": {}, "used": set(), "new": False}


def cache_file() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / f"startup-code-{sys.implementation.cache_tag}.marshal"


def _calls(module, name: str) -> bool:
    """Whether a function of ``module`` calls the builtin ``name`` by its global name."""
    return any(isinstance(f, type(_calls)) and f.__module__ == module.__name__ and name in f.__code__.co_names
               for f in vars(module).values())


def supported() -> bool:
    """Whether this Python makes its generated code and compiles its patterns as checked (the docstring)."""
    if sys.implementation.cache_tag is None or sys.version_info[:2] not in ((3, 11), (3, 12)):
        return False
    if not ({"_compiler", "compile"} <= set(re._compile.__code__.co_names)
            and {"_sre", "compile", "_code", "_parser", "parse"} <= set(_RE_COMPILE.__code__.co_names)
            and hasattr(_compiler, "_code") and hasattr(_compiler, "_parser") and hasattr(_compiler, "SRE_FLAG_DEBUG")):
        return False
    return all(_calls(module, name) for module, name, _ in _HOOKS)


def _applies() -> bool:
    if os.environ.get(ENV, "").strip().lower() in ("0", "off", "false", "no") or not supported():
        return False
    return (all(name not in vars(module) for module, name, _ in _HOOKS)  # nobody else's exec / eval there
            and _compiler.compile is _RE_COMPILE)


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


def _re_compile(p, flags=0):
    """``re._compiler.compile``, from what an earlier start kept where it can (see the docstring)."""
    if not (type(p) in (str, bytes) and type(flags) is int) or flags & _compiler.SRE_FLAG_DEBUG:
        return _RE_COMPILE(p, flags)
    key = ("re", p, flags)
    entries = _state["entries"]
    kept = entries.get(key)
    if kept is not None:
        final_flags, code, groups, groupindex, indexgroup = kept
        try:
            compiled = _sre.compile(p, final_flags, list(code), groups, dict(groupindex), indexgroup)
        except Exception:  # not code this engine runs: compiled as usual below
            del entries[key]
        else:
            _state["used"].add(key)
            return compiled
    parsed = _compiler._parser.parse(p, flags)  # re._compiler.compile, step by step (Python 3.11, 3.12)
    code = _compiler._code(parsed, flags)
    groupindex = parsed.state.groupdict
    indexgroup = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    args = (flags | parsed.state.flags, code, parsed.state.groups - 1, dict(groupindex), tuple(indexgroup))
    entries[key] = (int(args[0]), [int(op) for op in code], int(args[2]), args[3], args[4])  # opcodes are int subclasses
    _state["used"].add(key)
    _state["new"] = True
    return _sre.compile(p, *args)


def _read(path: Path) -> dict:
    """The kept code in ``path``: {} where it is absent, not the user's own, too big or not what we wrote."""
    raw = read_private(path, MAX_BYTES)
    if raw is None:
        return {}
    try:
        data = marshal.loads(raw)
    except Exception:  # damaged: compile as usual
        return {}
    if not (isinstance(data, tuple) and len(data) == 2 and data[0] == _HEADER and isinstance(data[1], dict)):
        return {}
    entries = data[1]
    if len(entries) > MAX_ENTRIES or not all(_valid(key, value) for key, value in entries.items()):
        return {}
    return entries


def _valid(key, value) -> bool:
    if not isinstance(key, tuple) or not key:
        return False
    if key[0] == "re":  # ("re", pattern, flags): (flags, code, groups, groupindex, indexgroup)
        return (len(key) == 3 and type(key[1]) in (str, bytes) and type(key[2]) is int
                and type(value) is tuple and len(value) == 5 and type(value[0]) is int and type(value[2]) is int
                and type(value[1]) is list  # its items: _sre.compile checks the code it is given
                and type(value[3]) is dict and all(type(n) is str and type(i) is int for n, i in value[3].items())
                and type(value[4]) is tuple and all(n is None or type(n) is str for n in value[4]))
    return (len(key) == 2 and key[0] in ("exec", "eval") and isinstance(key[1], str)
            and type(value) is CodeType and value.co_filename == "<string>")


def install() -> None:
    """Take generated code from what was kept, until ``release()`` (once per process)."""
    if _state["installed"] or not _applies():
        return
    try:
        _state["entries"] = _read(cache_file())
    except Exception:  # no cache folder to be found (no home): compiled as usual
        _state["entries"] = {}
    for module, name, _ in _HOOKS:
        setattr(module, name, _SHADOWS[name])
    _compiler.compile = _re_compile
    _state["installed"] = True


def release() -> None:
    """Give dataclasses, namedtuple and re their own back; keep what this start compiled anew for the next."""
    if not _state["installed"]:
        return
    for module, name, _ in _HOOKS:
        if vars(module).get(name) is _SHADOWS[name]:
            delattr(module, name)
    if _compiler.compile is _re_compile:
        _compiler.compile = _RE_COMPILE
    _state["installed"] = False
    if not _state["new"]:
        return
    entries, used = _state["entries"], _state["used"]
    try:
        blob = marshal.dumps((_HEADER, entries)) if len(entries) <= MAX_ENTRIES else b""
        if not blob or len(blob) > MAX_BYTES:  # too many: what other starts kept drops out, this start's stays
            blob = marshal.dumps((_HEADER, {key: code for key, code in entries.items() if key in used}))
            if len(blob) > MAX_BYTES:
                return
        write_private(cache_file(), blob)
    except Exception:  # a read-only or full cache folder: the next start compiles again, nothing else
        return
    finally:
        _state["entries"], _state["used"], _state["new"] = {}, set(), False
