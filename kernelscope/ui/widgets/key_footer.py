"""The screens' footer: KeyFooter (Textual's Footer, its keys composed once: see
kernelscope.ui.textual_private.footer), showing only keys that fit whole, and the order a screen's keys
are shown in (``headline_first``).
"""

from __future__ import annotations

from textual import events

from kernelscope.ui.textual_private.footer import KeyFooter as _Footer

__all__ = ["KeyFooter", "headline_first"]


class KeyFooter(_Footer):
    """A footer whose keys end whole: one that would run past the right edge (``t Th`` at 80 columns)
    is hidden with every key after it; ``?`` (listed early by each screen) shows them all. Public
    Textual only: the keys' ``virtual_region`` after layout, ``display``, ``recompose``."""

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        if any(not child.display for child in self.children):
            self.call_after_refresh(self._refit)  # wider now, maybe: every key back, then fitted again
        else:
            self.call_after_refresh(self._fit)

    async def _refit(self) -> None:
        if self.is_attached:
            await self.recompose()

    def _fit(self) -> None:
        if not self.is_attached:
            return
        docked = [child for child in self.children if child.styles.dock in ("left", "right")]  # ^p palette
        width = self.scrollable_content_region.width - sum(child.outer_size.width for child in docked
                                                           if child.display)
        past = False
        for child in self.children:
            if child in docked:
                continue
            past = past or child.virtual_region.right > width
            if past and child.display:
                child.display = False


def headline_first(bindings: dict, actions: tuple[str, ...]) -> dict:
    """A screen's active bindings with those of ``actions`` (names, without arguments) first.

    A footer shows keys in this order, and at 80 columns only the first five or six fit: a screen puts
    its headline keys there, before the focused widget's own. Key handling does not read this order.
    """
    first = {key: b for key, b in bindings.items() if b.binding.action.partition("(")[0] in actions}
    return first | bindings
