"""Textual's internals, in one place: the fast paths that reimplement them, each on only where it fits.

Checked against Textual 8.2.8 (``CHECKED_VERSIONS``). Moving through a 12-layer GPT-2's kernels is fluid
(~1.2x a minimal Textual app, from 2.8x) because a few Textual internals are redone here, each a module:

    compositor   SparseCompositor: a partial update draws only the widgets a repainted region touches
    styles       LineStyles: a widget's styled content lines kept (StylesCache.render_line)
    scrollbars   CachedScrollBar, StableScrollbars: scrollbars drawn from kept lines, updated on change
    data_table   FastTableRows: DataTable's _render_cell and row lines kept, cells replaced in place
    lru          clear_lru: Textual's LRUCache emptied without leaving its circular list as garbage
    strips       with_offsets, set_border_line: Strip.apply_offsets's metas kept; a border title's line
    first_paint  settle_first_paint: a new screen's first layout is not painted until its widgets fit it
    css_cache    KeptStylesheet: the app's parsed CSS kept on disk from one start to the next
    components   LazyComponentStyles: a widget's component-class styles matched when first asked for

Each is feature-detected here (``FAST``): on only where the installed Textual is a checked version *and*
has the exact signatures and attributes that path relies on. Anywhere else (another Textual, or
``KERNELSCOPE_TEXTUAL_FAST=0`` in the environment) every widget takes Textual's stock path: slower, never
drawn wrong. tests/test_ui_render_paths.py compares each fast path's output with Textual's own, and CI
runs the UI tests once more with the fast paths off. To check a new Textual: add it to
``CHECKED_VERSIONS`` and run those tests.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path

CHECKED_VERSIONS = ("8.2.8",)
FAST_ENV = "KERNELSCOPE_TEXTUAL_FAST"  # "0" (or off/false/no): every fast path off
PATHS = ("compositor", "styles", "scrollbars", "data_table", "lru", "strips", "first_paint", "css_cache",
         "components")


@dataclass(frozen=True)
class FastPaths:
    """Which fast paths are on; for each one off, why (one line)."""

    version: str
    on: frozenset[str] = frozenset()
    why_off: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> bool:
        if name in PATHS:
            return name in self.on
        raise AttributeError(name)

    @property
    def all_on(self) -> bool:
        return self.on == frozenset(PATHS)

    def describe(self) -> str:
        if self.all_on:
            return f"Textual {self.version}: every fast path on"
        return f"Textual {self.version}: " + "; ".join(f"{name} off ({self.why_off[name]})" for name in PATHS
                                                       if name not in self.on)


def _params(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def _has(obj, *names: str) -> None:
    missing = [name for name in names if not hasattr(obj, name)]
    if missing:
        raise LookupError(f"{getattr(obj, '__name__', type(obj).__name__)} has no {', '.join(missing)}")


def _same(owner, name: str, expected: list[str]) -> None:
    got = _params(getattr(owner, name))
    if got != expected:
        what = f"{owner.__name__}.{name}"
        raise LookupError(f"{what}{tuple(got)} is not {what}{tuple(expected)}")


# What each fast path relies on, exactly (Textual 8.2.8). A check raises LookupError (or ImportError)
# naming what is missing or different.
def _check_compositor() -> None:
    from textual._compositor import ChopsUpdate, Compositor

    _has(Compositor, "render_partial_update", "_render_chops", "_regions_to_spans", "cuts", "visible_widgets")
    _same(Compositor, "render_partial_update", ["self"])
    _same(Compositor, "_render_chops", ["self", "crop", "is_rendered_line"])
    _same(ChopsUpdate, "__init__", ["self", "chops", "spans", "chop_ends"])
    from textual._compositor import LayoutUpdate

    _same(Compositor, "render_full_update", ["self", "simplify"])
    _same(LayoutUpdate, "__init__", ["self", "strips", "region"])
    if "render_full_update" not in Compositor.render_update.__code__.co_names:
        raise LookupError("Compositor.render_update does not draw a full update with render_full_update")
    compositor = Compositor()
    _has(compositor, "size")
    if not isinstance(compositor._dirty_regions, set):
        raise LookupError("Compositor._dirty_regions is not a set")


def _check_styles() -> None:
    from textual._styles_cache import StylesCache

    _has(StylesCache, "render", "render_line", "get_inner_outer", "clear")
    _same(StylesCache, "render_line", ["self", "styles", "y", "size", "content_size", "padding", "base_background",
                                    "background", "render_content_line", "border_title", "border_subtitle",
                                    "opacity", "ansi_theme", "native_ansi"])
    _same(StylesCache, "get_inner_outer", ["cls", "base_background", "background"])
    _has(StylesCache(), "_dirty_lines")


def _check_scrollbars() -> None:
    from textual.app import App
    from textual.scrollbar import ScrollBar, ScrollBarRender
    from textual.widget import Widget

    _same(ScrollBarRender, "render_bar", ["size", "virtual_size", "window_size", "position", "thickness", "vertical",
                                       "back_color", "bar_color"])
    _same(ScrollBarRender, "__init__", ["self", "virtual_size", "window_size", "position", "thickness", "vertical",
                                     "style"])
    _same(ScrollBar, "__init__", ["self", "vertical", "name", "thickness"])
    _same(Widget, "_scroll_update", ["self", "virtual_size"])
    _same(App, "_start_widget", ["self", "parent", "widget"])
    _has(Widget, "vertical_scrollbar", "horizontal_scrollbar", "get_line_filters", "background_colors",
         "scrollbar_size_vertical", "scrollbar_size_horizontal")
    _has(App, "ansi_theme", "native_ansi_color")
    _has(Widget(), "_repaint_required", "_dirty_regions", "_styles_cache", "_vertical_scrollbar",
         "_horizontal_scrollbar")


def _check_data_table() -> None:
    from textual.widgets import DataTable

    _same(DataTable, "_render_cell", ["self", "row_index", "column_index", "base_style", "width", "cursor", "hover"])
    _same(DataTable, "_get_styles_to_render_cell", ["self", "is_header_cell", "is_row_label_cell", "is_fixed_style_cell",
                                                 "hover", "cursor", "show_cursor", "show_hover_cursor",
                                                 "has_css_foreground_priority", "has_css_background_priority"])
    _same(DataTable, "_get_row_renderables", ["self", "row_index"])
    _same(DataTable, "render_line", ["self", "y"])
    _same(DataTable, "_update_column_widths", ["self", "updated_cells"])
    _same(DataTable, "_update_dimensions", ["self", "new_rows"])
    from textual import render
    from textual.widgets import _data_table

    if getattr(_data_table, "measure", None) is not render.measure or not {"measure"} <= set(
            DataTable._update_column_widths.__code__.co_names) & set(DataTable._update_dimensions.__code__.co_names):
        raise LookupError("DataTable does not size its columns with textual.render.measure")
    _same(render, "measure", ["console", "renderable", "default", "container_width"])
    _has(DataTable(), "_row_locations", "_column_locations", "_cell_render_cache", "_row_render_cache",
         "_row_renderable_cache", "_line_cache", "_update_count", "_show_hover_cursor", "_data",
         "_pseudo_class_state", "_updated_cells", "_require_update_dimensions", "_new_rows")


def _check_lru() -> None:
    from textual.cache import LRUCache

    cache = LRUCache(2)
    cache["key"] = "value"
    links, head = getattr(cache, "_cache", None), getattr(cache, "_head", None)
    if not (isinstance(links, dict) and isinstance(head, list) and links.get("key") == head == [head, head, "key",
                                                                                            "value"]):
        raise LookupError("LRUCache does not link its entries as [previous, next, key, value] lists")


def _check_strips() -> None:
    from textual.strip import Strip
    from textual.widget import Widget, _BorderTitle

    _same(Strip, "apply_offsets", ["self", "x", "y"])
    if not isinstance(Widget.__dict__.get("border_subtitle"), _BorderTitle) or not hasattr(Widget(), "_border_subtitle"):
        raise LookupError("Widget.border_subtitle is not stored in _border_subtitle")


def _check_first_paint() -> None:
    from textual.screen import Screen

    _same(Screen, "_compositor_refresh", ["self"])
    if "_compositor_refresh" not in Screen._refresh_layout.__code__.co_names:
        raise LookupError("Screen._refresh_layout does not paint through Screen._compositor_refresh")
    if "_dirty_widgets" not in Screen.__init__.__code__.co_names:
        raise LookupError("Screen has no _dirty_widgets")
    from textual.message_pump import MessagePump
    from textual.timer import Timer

    _same(Screen, "_on_timer_update", ["self"])
    _same(Timer, "resume", ["self"])
    if not (isinstance(vars(Screen).get("_update_timer"), property)
            and {"_update_timer", "resume"} <= set(Screen._on_idle.__code__.co_names)):
        raise LookupError("Screen._on_idle does not resume Screen._update_timer")
    if not isinstance(vars(MessagePump).get("message_queue_size"), property):
        raise LookupError("MessagePump has no message_queue_size")


def _check_css_cache() -> None:
    from textual.app import App
    from textual.css import model
    from textual.css.stylesheet import Stylesheet

    _same(Stylesheet, "_parse_rules", ["self", "css", "read_from", "is_default_rules", "tie_breaker", "scope"])
    _same(Stylesheet, "reparse", ["self"])
    _same(Stylesheet, "copy", ["self"])
    _has(Stylesheet(), "_parse_cache", "_variables", "source", "_invalid_css", "_rules", "_rules_map", "_require_parse")
    _has(model, "RuleSet", "_check_class", "_check_id", "_check_type", "_check_universal")
    if "Stylesheet" not in Stylesheet.reparse.__code__.co_names:
        raise LookupError("Stylesheet.reparse does not parse in a fresh Stylesheet")
    if "stylesheet" not in App.__init__.__code__.co_names:
        raise LookupError("App.__init__ makes no App.stylesheet")


def _check_components() -> None:
    from textual.css.stylesheet import Stylesheet
    from textual.dom import DOMNode

    _same(Stylesheet, "_process_component_classes", ["self", "node"])
    _same(DOMNode, "get_component_styles", ["self", "names"])
    if not {"DOMNode", "_attach", "apply", "_component_styles", "_get_component_classes", "refresh"} <= set(
            Stylesheet._process_component_classes.__code__.co_names):
        raise LookupError("Stylesheet._process_component_classes does not match virtual DOMNodes")
    if "_component_styles" not in DOMNode.get_component_styles.__code__.co_names:
        raise LookupError("DOMNode.get_component_styles does not read DOMNode._component_styles")
    if not isinstance(DOMNode()._component_styles, dict):
        raise LookupError("DOMNode._component_styles is not a dict")


_CHECKS = {"compositor": _check_compositor, "styles": _check_styles, "scrollbars": _check_scrollbars,
           "data_table": _check_data_table, "lru": _check_lru, "strips": _check_strips,
           "first_paint": _check_first_paint, "css_cache": _check_css_cache,
           "components": _check_components}


def textual_version() -> str:
    """The installed Textual's version: from its dist-info folder beside the package (a glob of one
    folder), else importlib.metadata, whose scan of every distribution on sys.path cost ~30 ms of each
    start-up."""
    import textual

    package = Path(getattr(textual, "__file__", "") or ".").resolve().parent
    found = sorted(package.parent.glob("textual-*.dist-info"))
    if len(found) == 1 and (found[0] / "METADATA").is_file():
        return found[0].name[len("textual-"):-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("textual")
    except PackageNotFoundError:  # imported from a folder on sys.path, not installed
        import textual

        return str(getattr(textual, "__version__", "unknown"))


def detect(version: str | None = None, environ: dict[str, str] | None = None) -> FastPaths:
    """Which fast paths fit this Textual (``version``: the installed one unless given)."""
    version = textual_version() if version is None else version
    environ = os.environ if environ is None else environ
    if environ.get(FAST_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return FastPaths(version, frozenset(), dict.fromkeys(PATHS, f"{FAST_ENV}={environ[FAST_ENV]}"))
    if version not in CHECKED_VERSIONS:
        why = f"checked against Textual {', '.join(CHECKED_VERSIONS)} only"
        return FastPaths(version, frozenset(), dict.fromkeys(PATHS, why))
    on, why_off = set(), {}
    for name, check in _CHECKS.items():
        try:
            check()
        except (LookupError, ImportError, AttributeError, TypeError, ValueError, OSError) as exc:
            why_off[name] = str(exc) or type(exc).__name__
        else:
            on.add(name)
    return FastPaths(version, frozenset(on), why_off)


FAST = detect()
