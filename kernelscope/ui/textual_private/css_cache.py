"""KeptStylesheet: Textual's stylesheet whose parsed CSS is kept on disk from one start to the next.

Checked against Textual 8.2.8 (``textual.css.stylesheet.Stylesheet``: ``_parse_rules``, ``_parse_cache``,
``_variables``, ``reparse``, ``copy``, ``source``, ``_invalid_css``; ``App.stylesheet``); on only where
``FAST.css_cache`` (see ``kernelscope.ui.textual_private``).

Every start parses the same CSS, some of it twice: the app's and each widget class's DEFAULT_CSS as the
class is first mounted, and all of it again when the first screen refreshes the CSS (a fresh Stylesheet,
with an empty parse cache). For the explorer that is 25 sources, ~180 rules, ~20 ms of a ~450 ms start,
most of it Textual's tokenizer. Here each source's parsed rules are first looked up in what an earlier
start parsed for the same CSS text, place, flags and theme variables; what was parsed anew is kept in
``<cache>/textual-css-<textual>-py<x.y>.pickle`` after the first frame (``keep_parsed_css``).

The file is read back by an unpickler that makes only what a parsed rule is made of (Textual's CSS model,
colours, scalars, layouts) and the two helpers those pickle through (an enum member by name, a partial
of one of Textual's selector checks). Anything else in it, a file of another shape, not the user's own,
or over MAX_BYTES, is ignored, and the CSS parsed as usual.
"""

from __future__ import annotations

import builtins
import enum
import functools
import io
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope.safefile import read_private, write_private
from kernelscope.ui.textual_private import FAST

try:
    from textual.css import model as _model
    from textual.css.stylesheet import Stylesheet
except ImportError:  # a Textual laid out otherwise: FAST.css_cache is off, the class below never made
    Stylesheet = object  # type: ignore[misc,assignment]
    _model = None  # type: ignore[assignment]
if FAST.components:  # component styles matched when first asked for (textual_private.components)
    from kernelscope.ui.textual_private.components import LazyComponentStylesheet as _Base
else:
    _Base = Stylesheet  # type: ignore[misc,assignment]

if TYPE_CHECKING:
    from textual.app import App

MAX_BYTES = 4 << 20
MAX_ENTRIES = 256  # sources kept (the explorer has 25; every screen of the app together ~60)

# What parsed rule sets are made of (module -> names): the only classes the unpickler makes.
_CLASSES = {
    "textual.css.model": {"RuleSet", "Selector", "SelectorSet", "SelectorType", "CombinatorType"},
    "textual.css.styles": {"Styles"},
    "textual.css.scalar": {"Scalar", "ScalarOffset", "Unit"},
    "textual.color": {"Color", "Gradient"},
    "textual.geometry": {"Spacing", "Offset", "Size", "Region"},
    "textual.layouts.grid": {"GridLayout"},
    "textual.layouts.horizontal": {"HorizontalLayout"},
    "textual.layouts.vertical": {"VerticalLayout"},
    "textual.layouts.stream": {"StreamLayout"},
}
_BUILTINS = {"set", "frozenset", "dict", "list", "tuple"}
_CHECKS = ("_check_class", "_check_id", "_check_type", "_check_universal")  # a Selector's match, a partial


def _attribute(obj: Any, name: Any) -> Any:
    """What pickle's ``getattr`` gives, for what it is used for only: a member of one of the enums above
    (``Unit.CELLS``), and a dict's ``get`` and ``__contains__`` (``Styles.get_rule`` and ``has_rule``)."""
    if type(obj) is dict and name in ("get", "__contains__"):
        return getattr(obj, name)
    if not (isinstance(obj, type) and issubclass(obj, enum.Enum) and obj.__module__ in _CLASSES
            and isinstance(name, str) and name in obj.__members__):
        raise pickle.UnpicklingError("not a CSS enum member or a dict's get")
    return obj[name]


def _selector_check(func: Any, *args: Any, **kwargs: Any) -> functools.partial:
    """What pickle's ``functools.partial(check, ...)`` gives, for Textual's selector checks only."""
    if not any(func is getattr(_model, name, None) for name in _CHECKS) or kwargs:
        raise pickle.UnpicklingError("not a partial of a selector check")
    return functools.partial(func, *args)


class _RulesUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name == "getattr":
            return _attribute
        if module == "functools" and name == "partial":
            return _selector_check
        if module == "builtins" and name in _BUILTINS:
            return getattr(builtins, name)
        if module == "textual.css.model" and name in _CHECKS:
            return getattr(_model, name)
        if name in _CLASSES.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of parsed CSS")


# Process-wide: what was read from the file and parsed since, for one set of theme variables.
_kept: dict[str, Any] = {"read": False, "variables": None, "entries": {}, "new": False}


def cache_file() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / f"textual-css-{FAST.version}-py{sys.version_info[0]}.{sys.version_info[1]}.pickle"


def _variables_key(variables: dict[str, str]) -> tuple:
    return tuple(sorted(variables.items()))


def _valid_key(key: Any) -> bool:
    return (isinstance(key, tuple) and len(key) == 5 and isinstance(key[0], str) and isinstance(key[2], bool)
            and isinstance(key[3], int) and isinstance(key[4], str)
            and (isinstance(key[1], str) or (isinstance(key[1], tuple) and all(isinstance(p, str) for p in key[1]))))


def _read(path: Path) -> dict[str, Any] | None:
    """The kept entries in ``path``, or None where it is absent, not ours, too big or not what we wrote."""
    raw = read_private(path, MAX_BYTES)
    if raw is None:
        return None
    try:
        data = _RulesUnpickler(io.BytesIO(raw)).load()
    except Exception:  # damaged, or made of what a parsed rule is not: parse as usual
        return None
    if not (isinstance(data, dict) and isinstance(data.get("variables"), tuple) and isinstance(data.get("entries"), dict)):
        return None
    ruleset = _model.RuleSet
    for key, rules in data["entries"].items():
        if not (_valid_key(key) and isinstance(rules, list) and all(type(r) is ruleset and not r.errors for r in rules)):
            return None
    return data


def _load() -> None:
    if _kept["read"]:
        return
    _kept["read"] = True
    try:
        data = _read(cache_file())
    except Exception:  # no cache folder to be found (no home): parsed as usual
        data = None
    if data is not None:
        _kept["variables"], _kept["entries"] = data["variables"], data["entries"]


def _pickled(value: Any) -> bytes | None:
    """``value`` pickled, where the unpickler above reads it back (else None: a CSS feature not listed)."""
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        _RulesUnpickler(io.BytesIO(blob)).load()
    except Exception:
        return None
    return blob


def keep_parsed_css() -> None:
    """Write what was parsed anew since the file was read (after the first frame: a few ms, once)."""
    if not (FAST.css_cache and _kept["new"]):
        return
    _kept["new"] = False
    entries = _kept["entries"]
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    try:
        blob = _pickled(kept := {"variables": _kept["variables"], "entries": entries})
        if blob is None:  # one source made of something the unpickler refuses: kept without it
            for key in [key for key in entries if _pickled(entries[key]) is None]:
                del entries[key]
            blob = _pickled(kept)
        if blob is None or len(blob) > MAX_BYTES:
            return
        write_private(cache_file(), blob)
    except Exception:  # a read-only or full cache folder: the next start parses again, nothing else
        return


class KeptStylesheet(_Base):
    """A Stylesheet that takes a source's parsed rules from what an earlier start kept, where it can."""

    def _parse_rules(self, css: str, read_from: Any, is_default_rules: bool = False, tie_breaker: int = 0,
                     scope: str = "") -> list:
        key = (css, read_from, is_default_rules, tie_breaker, scope)
        rules = self._parse_cache.get(key)
        if rules is not None:
            return rules
        _load()
        variables = _variables_key(self._variables)
        if _kept["variables"] == variables:
            rules = _kept["entries"].get(key)
            if rules is not None:
                self._parse_cache[key] = rules
                return rules
        rules = super()._parse_rules(css, read_from, is_default_rules=is_default_rules, tie_breaker=tie_breaker,
                                     scope=scope)
        if not any(rule.errors for rule in rules) and _valid_key(key):
            if _kept["variables"] != variables:  # another theme: it is the one kept from now on
                _kept["variables"], _kept["entries"] = variables, {}
            _kept["entries"][key] = rules
            _kept["new"] = True
        return rules

    def copy(self) -> KeptStylesheet:
        stylesheet = type(self)(variables=self._variables.copy())
        stylesheet.source = self.source.copy()
        return stylesheet

    def reparse(self) -> None:
        """Textual 8.2.8's reparse, its fresh stylesheet a KeptStylesheet (Textual's is a plain one)."""
        stylesheet = type(self)(variables=self._variables)
        for read_from, (css, is_defaults, tie_breaker, scope) in self.source.items():
            stylesheet.add_source(css, read_from=read_from, is_default_css=is_defaults, tie_breaker=tie_breaker,
                                  scope=scope)
        try:
            stylesheet.parse()
        except Exception:
            self._invalid_css.update(stylesheet._invalid_css)
            raise
        else:
            self._rules = stylesheet.rules
            self._rules_map = None
            self.source = stylesheet.source
            self._require_parse = False


def use_kept_stylesheet(app: App) -> None:
    """Give the app a KeptStylesheet in place of Textual's (in its __init__, before any CSS is read); with only
    the components fast path on, a LazyComponentStylesheet."""
    if not (type(app.stylesheet) is Stylesheet and not app.stylesheet.source):
        return
    if FAST.css_cache:
        app.stylesheet = KeptStylesheet(variables=app.stylesheet._variables)
    elif FAST.components:
        app.stylesheet = _Base(variables=app.stylesheet._variables)
