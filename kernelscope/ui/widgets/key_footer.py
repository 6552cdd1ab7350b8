"""The screens' footer: KeyFooter (Textual's Footer, its keys composed once: see
kernelscope.ui.textual_private.footer) and the order a screen's keys are shown in (``headline_first``).
"""

from __future__ import annotations

from kernelscope.ui.textual_private.footer import KeyFooter

__all__ = ["KeyFooter", "headline_first"]


def headline_first(bindings: dict, actions: tuple[str, ...]) -> dict:
    """A screen's active bindings with those of ``actions`` (names, without arguments) first.

    A footer shows keys in this order, and at 80 columns only the first five or six fit: a screen puts
    its headline keys there, before the focused widget's own. Key handling does not read this order.
    """
    first = {key: b for key, b in bindings.items() if b.binding.action.partition("(")[0] in actions}
    return first | bindings
