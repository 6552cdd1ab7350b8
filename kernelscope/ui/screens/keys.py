"""``?``: every key of the screen below, grouped (the focused pane's first), in a panel that scrolls.

Textual's help panel does not take the focus, so at 80x24 its last lines could not be reached from
the keyboard; this one takes it: ↑↓, PgUp/PgDn, Home/End scroll it, ``?`` or escape closes it.
"""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def key_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(group, keys, description) for each action bound on ``screen`` now, in the order the
    bindings apply: the focused widget's, its containers', the screen's, then the app's."""
    app = screen.app
    by_node: dict[object, defaultdict[str, list]] = {}
    for node, binding, _enabled, _tooltip in screen.active_bindings.values():
        if binding.system or not binding.description:
            continue
        by_node.setdefault(node, defaultdict(list))[binding.action].append(binding)
    rows = []
    # The focused pane's keys first, then the screen's, then those that work everywhere.
    order = sorted(by_node.items(), key=lambda item: isinstance(item[0], App) * 2 + isinstance(item[0], Screen))
    for node, actions in order:
        if isinstance(node, App):
            group = "everywhere"
        elif isinstance(node, Screen):
            group = "this screen"
        else:
            group = getattr(node, "BINDING_GROUP_TITLE", None) or "this pane"
        for bindings in actions.values():
            keys = " ".join(dict.fromkeys(app.get_key_display(b) for b in bindings))
            rows.append((group, keys, bindings[0].description))
    return rows


class KeysScreen(ModalScreen[None]):
    """The keys of the screen under it; it scrolls with the keyboard."""

    DEFAULT_CSS = """
    KeysScreen { align: right top; background: $background 40%; }
    KeysScreen #keys-panel { width: 40%; min-width: 34; max-width: 60; height: 100%;
                             border-left: vkey $foreground 30%; background: $surface; padding: 0 1; }
    KeysScreen #keys-hint { color: $text-muted; height: 1; }
    """

    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close", key_display="esc"),
    ]

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.rows = key_rows(under)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="keys-panel"):
            yield Static("↑↓ scroll · esc closes", id="keys-hint", markup=False)  # whole at 80 columns
            yield Static(self._text(), id="keys-list")

    def _text(self) -> Text:
        text = Text()
        width = max((len(k) for _, k, _ in self.rows), default=1)
        group = None
        for g, keys, description in self.rows:
            if g != group:
                if group is not None:
                    text.append("\n")
                text.append(g + "\n", style="bold underline")
                group = g
            text.append(keys.rjust(width), style="bold")
            text.append(f" {description}\n")
        text.rstrip()
        return text

    def on_mount(self) -> None:
        self.query_one("#keys-panel").focus()

    def action_close(self) -> None:
        self.dismiss(None)
