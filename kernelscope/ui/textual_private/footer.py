"""KeyFooter: Textual's Footer, with its keys from the first compose, rebuilt only when they change.

Checked against Textual 8.2.8 (``Footer._bindings_ready``, ``textual.widgets._footer.FooterKey`` and its
``compact`` reactive binding); on only where ``FAST.footer`` (see ``kernelscope.ui.textual_private``):
elsewhere ``KeyFooter`` is Textual's own Footer, unchanged (same keys, a little more repainting).

Textual's Footer composes no keys at first and rebuilds all its key widgets after every bindings
signal (a focus change, a screen push), each time one refresh later. That costs a whole-screen
re-layout and repaint before a screen settles, and again on every focus move between panes, even
when the keys shown stay the same (they mostly do: panes share their shown bindings). A screen
whose initial focus changes the keys mounts its KeyFooter after setting that focus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer

from kernelscope.ui.textual_private import FAST

try:
    from textual.widgets._footer import FooterKey
except ImportError:  # a Textual whose footer is laid out differently: FAST.footer is off
    FooterKey = None

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.screen import Screen


class _KeyFooter(Footer):
    """A Footer that shows its keys from the first compose and skips rebuilds that change nothing."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._shown: tuple | None = None

    def _keys(self) -> tuple:
        """What the footer would show: every field its compose reads from a shown binding."""
        app = self.app
        return tuple(
            (key, binding.action, binding.description, app.get_key_display(binding), enabled, tooltip,
             binding.group)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == app.COMMAND_PALETTE_BINDING
        )

    def compose(self) -> ComposeResult:
        self.set_reactive(Footer._bindings_ready, True)  # the screen's bindings exist once we compose
        self._shown = self._keys()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
                # A key's compact starts True and is bound to ours (False): each key would restyle
                # itself twice on mount (class on, class off). Start it at the bound value instead.
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        if not (self.is_attached and screen is self.screen and screen.app.app_focus):
            return
        keys = self._keys()
        if keys == self._shown:
            return  # unchanged, or a rebuild for these keys is already on its way
        self._shown = keys
        self.call_after_refresh(self.recompose)  # as Footer does: the keypress's own frame first


KeyFooter = _KeyFooter if FAST.footer else Footer
