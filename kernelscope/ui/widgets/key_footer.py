"""The screens' footer: KeyFooter, the screen's shown keys drawn as one line by one widget (public Textual
only), showing only keys that fit whole, and the order a screen's keys are shown in (``headline_first``).

Textual's Footer is a container of a widget per key (22 on the explorer, with their groups and labels),
each mounted, styled and laid out, and all rebuilt whenever the keys change: a fifth of a fresh
`kernelscope BUNDLE`'s time to its first frame went there. KeyFooter reads the screen's active bindings when
it draws (so a screen may compose it before it sets its first focus), looks like Textual's Footer (the
same theme variables), and a click on a key presses it, as there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from itertools import groupby

from rich.style import Style
from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.widget import Widget

__all__ = ["KeyFooter", "headline_first"]

PALETTE_BORDER = "▏"


@dataclass(frozen=True)
class FooterItem:
    """One clickable key of the footer: where it is drawn, what pressing it sends."""

    start: int
    end: int
    key: str  # the binding's key, as App.simulate_key takes it
    key_display: str
    description: str
    enabled: bool
    tooltip: str
    palette: bool = False
    grouped: bool = False  # one of a group's keys (``,`` ``.``), the group's label in ``description``


class KeyFooter(Widget, can_focus=False):
    """The screen's shown keys on one line. A key that would run past the right edge (or under ``^p
    palette``) is left out with every key after it; ``?`` (listed early by each screen) shows them all."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-footer--key", "key-footer--description", "key-footer--hover", "key-footer--border"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .key-footer--hover {
            background: $block-hover-background;
        }
        & > .key-footer--border {
            color: $foreground 20%;
        }
    }
    """

    show_command_palette: reactive[bool] = reactive(True)

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.set_reactive(KeyFooter.show_command_palette, show_command_palette)
        self._line: tuple[tuple, Text, list[FooterItem]] | None = None  # (key, drawn line, its items)
        self._hover: int | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen) -> None:
        if self.is_attached and screen is self.screen:
            self._line = None
            self.refresh()

    # -- what is shown ------------------------------------------------------------------------
    def _entries(self) -> tuple[list[tuple[str | None, bool, list[FooterItem]]], FooterItem | None]:
        """The shown bindings as Footer composes them, one per action: (group label or None, compact, its
        keys) in order, a group's keys together; and the palette's key (for the right edge), if shown.
        Positions are 0 here (``_build`` lays them out)."""
        app = self.app
        active = self.screen.active_bindings
        by_action: defaultdict[str, list] = defaultdict(list)
        for _, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action[binding.action].append((binding, enabled, tooltip))
        entries: list[tuple[str | None, bool, list[FooterItem]]] = []
        for group, members in groupby(by_action.values(), lambda multi: multi[0][0].group):
            firsts = [multi[0] for multi in members]
            if group is not None and len(firsts) > 1:
                entries.append((group.description, group.compact,
                                [FooterItem(0, 0, b.key, app.get_key_display(b), group.description, enabled,
                                            tooltip or b.description, grouped=True) for b, enabled, tooltip in firsts]))
            else:
                entries.extend((None, False, [FooterItem(0, 0, b.key, app.get_key_display(b), b.description, enabled,
                                                         tooltip or "")]) for b, enabled, tooltip in firsts)
        palette = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            found = active.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, b, enabled, _ = found
                palette = FooterItem(0, 0, b.key, app.get_key_display(b), b.description, enabled,
                                     b.tooltip or b.description, palette=True)
        return entries, palette

    def _build(self, width: int) -> tuple[Text, list[FooterItem]]:
        key_style = self.get_component_rich_style("key-footer--key", partial=True)
        desc_style = self.get_component_rich_style("key-footer--description", partial=True)

        def styled(style: Style, item: FooterItem) -> Style:
            return style if item.enabled else style + Style(dim=True)

        entries, palette = self._entries()
        tail = Text()  # the palette's key, at the right edge
        if palette is not None:
            tail.append(PALETTE_BORDER, self.get_component_rich_style("key-footer--border", partial=True))
            tail.append(palette.key_display, styled(key_style, palette))
            tail.append(f" {palette.description} ", styled(desc_style, palette))
        line = Text(no_wrap=True, overflow="crop", end="")
        items: list[FooterItem] = []
        for label, compact, keys in entries:
            part, placed = Text(), []
            if label is None:  # one key and its description
                item = keys[0]
                part.append(f" {item.key_display} " if item.description else item.key_display, styled(key_style, item))
                if item.description:
                    part.append(f"{item.description} ", styled(desc_style, item))
                placed.append((0, part.cell_len, item))
            else:  # a group's keys, then its label
                part.append(" ")
                for item in keys:
                    start = part.cell_len
                    part.append(item.key_display if compact else f" {item.key_display} ", styled(key_style, item))
                    placed.append((start, part.cell_len, item))
                part.append(" ")
                part.append(label, desc_style)
                part.append(" ")
            if line.cell_len + part.cell_len > width - tail.cell_len:
                break  # this key and every one after it: listed by ?
            offset = line.cell_len
            items.extend(replace(item, start=offset + start, end=offset + end) for start, end, item in placed)
            line.append_text(part)
        if palette is not None:
            offset = width - tail.cell_len
            line.append(" " * max(0, offset - line.cell_len))
            line.append_text(tail)
            items.append(replace(palette, start=offset + 1, end=offset + tail.cell_len))
        return line, items

    def _drawn(self) -> tuple[Text, list[FooterItem]]:
        width = self.size.width
        key = (width, self.app.theme, self.show_command_palette)
        if self._line is None or self._line[0] != key:
            self._line = (key, *self._build(width))
        return self._line[1], self._line[2]

    @property
    def items(self) -> list[FooterItem]:
        """The keys shown now, left to right (the palette's last)."""
        return self._drawn()[1]

    def shown_keys(self) -> list[str]:
        """The keys shown now as they are drawn (``?``, ``,``, ``^p``), left to right."""
        return [item.key_display for item in self.items]

    def labels(self) -> list[str]:
        """What is shown, left to right: ``"y Copy"`` for a key, a group's keys one by one then its label."""
        out: list[str] = []
        items = self.items
        for i, item in enumerate(items):
            if not item.grouped:
                out.append(f"{item.key_display} {item.description}".strip())
                continue
            out.append(item.key_display)
            following = items[i + 1] if i + 1 < len(items) else None
            if following is None or not following.grouped or following.start != item.end:
                out.append(item.description)
        return out

    def render(self) -> Text:
        line, items = self._drawn()
        if self._hover is None or self._hover >= len(items):
            return line
        line = line.copy()
        item = items[self._hover]
        line.stylize(self.get_component_rich_style("key-footer--hover", partial=True), item.start, item.end)
        return line

    # -- the mouse ----------------------------------------------------------------------------
    def _item_at(self, x: int) -> int | None:
        for i, item in enumerate(self.items):  # a key with its description; in a group, the key alone
            if item.start <= x < item.end:
                return i
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        index = self._item_at(event.x)
        if index != self._hover:
            self._hover = index
            self.tooltip = (self.items[index].tooltip or None) if index is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self._item_at(event.x)
        if index is None:
            return
        item = self.items[index]
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()


def headline_first(bindings: dict, actions: tuple[str, ...]) -> dict:
    """A screen's active bindings with those of ``actions`` (names, without arguments) first, in the
    order ``actions`` names them.

    A footer shows keys in this order, and at 80 columns only the first five or six fit: a screen puts
    its headline keys there, before the focused widget's own. Key handling does not read this order.
    """
    first = {key: b for name in actions for key, b in bindings.items() if b.binding.action.partition("(")[0] == name}
    return first | bindings
