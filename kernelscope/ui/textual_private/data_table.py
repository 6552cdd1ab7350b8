"""FastTableRows: a DataTable whose rows and cells are drawn once per state and replaced in place.

Checked against Textual 8.2.8 (``DataTable._render_cell``, ``_get_styles_to_render_cell``,
``_get_row_renderables``, ``render_line`` and the private caches ``_cell_render_cache``,
``_row_render_cache``, ``_row_renderable_cache``, ``_line_cache``, ``_update_count``; ``_update_column_widths``
and ``_update_dimensions``, which size columns with the module's ``measure``, and ``_total_row_height``, the
height it gives the rows); on only where
``FAST.data_table`` (see ``kernelscope.ui.textual_private``): elsewhere ``FastTableRows`` is a mixin whose
``replace_cells`` is DataTable's ``update_cell`` and nothing else changes.
"""

from __future__ import annotations

from itertools import islice

from rich.cells import cell_len
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.render import measure as _textual_measure
from textual.strip import Strip
from textual.widgets.data_table import ColumnKey, RowKey

try:
    from textual.widgets import _data_table as _table_module  # where DataTable looks measure up
except ImportError:  # a Textual laid out otherwise: FAST.data_table is off
    _table_module = None

from kernelscope.ui.lru import Kept
from kernelscope.ui.textual_private import FAST
from kernelscope.ui.textual_private.lru import clear_lru


class _StockTableRows:
    """DataTable as it is (the fast path is off)."""

    rows_to_come = 0  # rows about to be added (see _FastTableRows.settle_dimensions)

    def replace_cells(self, column: str, cells: dict[str, object]) -> None:
        """Put new values in one column for these rows (by key)."""
        for row, value in cells.items():
            self.update_cell(row, column, value)  # type: ignore[attr-defined]

    def settle_dimensions(self) -> None:
        """Size the columns and rows now (DataTable does it when idle, after the next frame)."""


def _measure(console, renderable, default: int, *, container_width: int | None = None) -> int:
    """textual.render.measure, with a Text's width worked out as its __rich_measure__ gives it (the widest
    line), not through a ConsoleOptions made for each cell: ~200 cells measured for the first frame."""
    if type(renderable) is Text and container_width is None:
        lines = renderable.plain.splitlines()
        return max(cell_len(line) for line in lines) if lines else 0
    return _textual_measure(console, renderable, default, container_width=container_width)


_SEPARATOR = Text("\n")
_NO_STYLE = Style.null()  # Padding's style ("none")


def _one_line(cell, console, options, width: int, pad: int) -> list[Segment] | None:
    """What ``console.render(Padding(cell, (0, pad)), options)`` gives for a Text of one line that fits the cell
    (with ``options`` of that width, one line high, no wrapping), without the renderer's layers: Padding's
    render_lines of the Text (wrap, which changes nothing for such a line; the lines joined, a style of the
    whole line becoming a span; Text.render; the line padded to its width with a blank in Padding's
    style), the padding either side in that style, its line end. None for any other cell: rendered as usual."""
    if type(cell) is not Text or cell.end not in ("", "\n") or (cell.justify or options.justify or "default") != "default":
        return None
    inner = width - 2 * pad
    text = cell.plain
    if inner < 0 or "\n" in text or "\t" in text or cell_len(text) > inner:
        return None
    line = list(_SEPARATOR.join([cell]).render(console))
    used = sum(segment.cell_length for segment in line)
    if used < inner:
        line.append(Segment(" " * (inner - used), _NO_STYLE))
    if not pad:
        return [*line, Segment.line()]
    edge = Segment(" " * pad, _NO_STYLE)
    return [edge, *line, edge, Segment.line()]


class _FastTableRows(_StockTableRows):
    """Mix into a DataTable (before it) whose cursor is a row."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines: Kept[tuple, Strip] = Kept(512)  # see render_line
        self._plain_cells: Kept[tuple, tuple] = Kept(1024)  # see _render_cell
        self._row_changes: dict[str, int] = {}  # row key -> cells replaced in place (see replace_cells)

    def notify_style_update(self) -> None:
        super().notify_style_update()  # type: ignore[misc]
        self._lines.clear()

    def settle_dimensions(self) -> None:
        """Size the columns and rows now, as DataTable does when idle (Textual 8.2.8 ``_on_idle``): cells
        made to fit a new width change the table's virtual size, and the layout that follows them (the
        explorer's first frame, see first_paint) sees it, not a layout and a frame of their own after it."""
        _table_module.measure = _measure  # for these two calls (one task: nothing else runs meanwhile)
        try:
            if self._updated_cells:
                updated = self._updated_cells.copy()
                self._updated_cells.clear()
                self._update_column_widths(updated)
            if self._require_update_dimensions:
                self._require_update_dimensions = False
                new_rows = self._new_rows.copy()
                self._new_rows.clear()
                self._update_dimensions(new_rows)
        finally:
            _table_module.measure = _textual_measure
        if self.rows_to_come:  # rows a long list adds after its first frame: that frame's scrollbar is the settled one
            header = self.header_height if self.show_header else 0
            self.virtual_size = Size(self.virtual_size.width, self._total_row_height + header + self.rows_to_come)

    def clear(self, *args, **kwargs):
        self._lines.clear()
        self._row_changes.clear()
        return super().clear(*args, **kwargs)  # type: ignore[misc]

    def render_line(self, y: int) -> Strip:
        """A row's line, kept per row and state. DataTable keys its own line cache on the cursor's
        position, so when the list scrolls as the cursor moves every visible row is drawn again; a row
        looks the same wherever it is on screen, as long as its cursor, hover and data are."""
        header = self.header_height if self.show_header else 0
        scroll_x, scroll_y = self.scroll_offset
        row = y - header + scroll_y
        if y < header or self.fixed_rows or self.cursor_type != "row" or not 0 <= row < self.row_count:
            return super().render_line(y)  # type: ignore[misc]
        kid = self.ordered_rows[row].key.value
        key = (kid, row, scroll_x, self.size.width, self.show_cursor and row == self.cursor_row, row == self.hover_row,
               self._row_changes.get(kid, 0), self._update_count, self.get_pseudo_class_state(), self.app.theme)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._lines[key] = super().render_line(y)  # type: ignore[misc]
        return strip

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False,
                     hover: bool = False):
        """DataTable's _render_cell for a row of data, its cell's unstyled rendering kept.

        A cell is drawn again whenever its row's cursor or hover state changes, the cursor row on every
        move: rendering its Text inside Padding inside Styled took ~0.3 ms a cell, six a row. The text
        renders the same in every state; only the styles laid over it (before and after, as Styled lays
        them) change. So the padded text's segments are kept, per stored value and width, and each state
        is those segments styled, split and padded into lines as Console.render_lines does. Header,
        row-label, fixed and multi-line cells take DataTable's own path."""
        try:
            row_key = self._row_locations.get_key(row_index)
            column_key = self._column_locations.get_key(column_index)
            row = self.rows[row_key]
        except KeyError:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)  # type: ignore[misc]
        if row_index < 0 or column_index < 0 or row_index < self.fixed_rows or column_index < self.fixed_columns \
                or row.height != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)  # type: ignore[misc]
        cache = self._cell_render_cache
        key = (row_key, column_key, base_style, cursor, hover, self._show_hover_cursor, self._update_count,
               self._pseudo_class_state)
        lines = cache.get(key)
        if lines is not None:
            return lines
        _, cells = self._get_row_renderables(row_index)
        cell = cells[column_index]
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        console = self.app.console
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        # Keyed by the value stored in the table (its renderable is made anew at each call): a value
        # replaced (update_cell, a cell replaced in place) is another object, so never an old rendering.
        raw = self._data[row_key][column_key]
        plain_key = (id(raw), width, self.cell_padding)
        plain = self._plain_cells.get(plain_key)
        if plain is None or plain[0] is not raw:
            segments = _one_line(cell, console, options, width, self.cell_padding)
            if segments is None:
                segments = list(console.render(Padding(cell, (0, self.cell_padding)), options))
            plain = (raw, segments)
            self._plain_cells[plain_key] = plain
        pre = console.get_style(base_style + Style.from_meta({"row": row_index, "column": column_index})
                                + component_style)
        styled = Segment.apply_style(plain[1], style=pre, post_style=console.get_style(post_style))
        lines = list(islice(Segment.split_and_crop_lines(styled, width, include_new_lines=False, pad=True), None, 1))
        if not lines:
            lines = [[Segment(" " * width)]]
        cache[key] = lines
        return lines

    def replace_cells(self, column: str, cells: dict[str, object]) -> None:
        """Put new values in one column of fixed width for these rows, re-rendering those rows only.

        DataTable.update_cell bumps a counter that every cached cell and row is keyed on, so moving the
        selection (two marks) re-rendered every visible row of the table on each key. The new values need
        only their own cells and rows dropped from the caches. Rows not in the table: update_cell."""
        keys = {RowKey(kid) for kid in cells}
        data = self._data
        if not keys <= data.keys():
            super().replace_cells(column, cells)
            return
        column_key = ColumnKey(column)
        for row, value in cells.items():
            data[RowKey(row)][column_key] = value
            self._row_changes[row] = self._row_changes.get(row, 0) + 1
        indices = {self.get_row_index(row) for row in keys}
        # Cells are keyed (row, column, ...), rows (row, ...), a row's renderables (count, index).
        for cache, wanted in ((self._cell_render_cache, lambda k: k[1] == column_key and k[0] in keys),
                              (self._row_render_cache, lambda k: k[0] in keys),
                              (self._row_renderable_cache, lambda k: k[1] in indices)):
            for key in [key for key in cache.keys() if wanted(key)]:
                cache.discard(key)
        clear_lru(self._line_cache)  # keyed by screen line: cheap to rebuild from the cached rows
        for index in indices:
            self.refresh_row(index)


FastTableRows = _FastTableRows if FAST.data_table else _StockTableRows
