"""LazyComponentStyles: a widget's component-class styles worked out when first asked for, not at every restyle.

Checked against Textual 8.2.8 (``Stylesheet._process_component_classes``, ``DOMNode._component_styles``,
``DOMNode._get_component_classes``, ``DOMNode.get_component_styles``); on only where ``FAST.components``
(see ``kernelscope.ui.textual_private``).

Each time Textual applies the stylesheet to a widget (as it mounts, and again whenever its classes, focus or
hover change), it also matches the whole stylesheet against one virtual node per component class of the
widget (DataTable has 9, each code view 5): at the explorer's first frame 73 virtual nodes for 39 widgets,
two thirds of the CSS matching of a start, most of them for parts no frame draws (a header cursor, a
fixed column, a hovered key). Here a widget's component styles are matched when first asked for
(``get_component_styles`` reads them through ``in`` and ``[]``). At a restyle, those already asked for are
matched again at once and compared with what they were, as Textual does for all of them, so a widget whose
component styles changed is refreshed as before; the others wait until they are asked for.
"""

from __future__ import annotations

from typing import Any

from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode


class LazyComponentStyles(dict):
    """A widget's component styles by name: those asked for so far in the dict, the rest matched on first use."""

    def __init__(self, stylesheet: Stylesheet, node: DOMNode, names: frozenset[str]) -> None:
        super().__init__()
        self._stylesheet, self._node, self._names = stylesheet, node, names

    def _match(self, name: str) -> Any:
        virtual_node = DOMNode(classes=name)  # as Textual's _process_component_classes makes it
        virtual_node._attach(self._node)
        self._stylesheet.apply(virtual_node, animate=False)
        dict.__setitem__(self, name, virtual_node.styles)
        return virtual_node.styles

    def __contains__(self, name: object) -> bool:
        return name in self._names or dict.__contains__(self, name)

    def __missing__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        return self._match(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def clear(self) -> None:  # the widget is unmounted: nothing is matched any more
        self._names = frozenset()
        super().clear()


class LazyComponentStylesheet(Stylesheet):
    def _process_component_classes(self, node: DOMNode) -> None:
        names = node._get_component_classes()
        if not names:
            return
        old = node._component_styles
        fresh = LazyComponentStyles(self, node, frozenset(names))
        if isinstance(old, LazyComponentStyles):
            asked = dict(old)  # the ones drawn with so far: matched again now, a change refreshes the widget
            refresh = any(fresh[name] != styles for name, styles in asked.items() if name in names)
        else:
            refresh = True  # the first time, Textual's own refreshes the widget (every style is new)
        node._component_styles = fresh
        if refresh:
            node.refresh()
