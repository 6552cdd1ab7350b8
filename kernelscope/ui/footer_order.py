"""The order a screen's footer shows its keys in: the focused pane's own keys first, then ``?`` (which
lists every key, so nothing hidden is lost), then the screen's headline keys, then the rest.

At 80 columns a footer holds six or seven keys and cuts the rest; a screen's ``active_bindings``
returns this order. Key handling does not read it. Pure ordering of Textual's ActiveBinding dict.
"""

from __future__ import annotations

from typing import Any

HELP_ACTION = "keys"  # the app's ? (show or hide every key)


def _action(active: Any) -> str:
    return active.binding.action.partition("(")[0]


def pane_keys_first(bindings: dict, own_nodes: set, headline: tuple[str, ...] = ()) -> dict:
    """``bindings`` (key -> ActiveBinding) reordered: those of ``own_nodes`` (the focused widget and the
    pane around it), then ``?``, then the ``headline`` actions in their order, then every other key."""
    own = {key: b for key, b in bindings.items() if b.node in own_nodes}
    help_key = {key: b for key, b in bindings.items() if _action(b) == HELP_ACTION}
    heads = {key: b for name in headline for key, b in bindings.items() if _action(b) == name}
    return own | help_key | heads | bindings


def focused_chain(screen, stop: type) -> set:
    """The focused widget and its ancestors up to the first ``stop`` (a pane), that one included."""
    nodes: set = set()
    node = screen.focused
    while node is not None and node is not screen:
        nodes.add(node)
        if isinstance(node, stop):
            break
        node = node.parent
    return nodes
