"""The shortcuts that keep moving through a 12-layer GPT-2 fluid draw exactly what Textual's own paths
draw: the sparse compositor sends the same cells, a code line's fast segments are rich's, the offsets
are Textual's, and kernel sources lexed while the user is idle are not lexed again on a move.

A test of a Textual fast path (kernelscope.ui.textual_private) runs where that path is on (the checked
Textual, KERNELSCOPE_TEXTUAL_FAST unset) and is skipped, saying why, where it is off: there the widgets
are Textual's own. More comparisons: tests/test_textual_private.py."""

from __future__ import annotations

import asyncio

import pytest
from pygments.token import Token
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._compositor import Compositor
from textual.strip import Strip

from kernelscope.ui import textdoc
from kernelscope.ui.app import make_app
from kernelscope.ui.panes.base import kernel_lexer, python_lexer
from kernelscope.ui.screens import list_runs
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.textual_private import FAST, PATHS
from kernelscope.ui.textual_private.compositor import SparseCompositor
from kernelscope.ui.textual_private.strips import with_offsets
from kernelscope.ui.widgets.code_lines import cropped, line_runs, token_style
from kernelscope.ui.widgets.code_view import CodeView

from .conftest import GPU_FIXTURES

GPT2 = GPU_FIXTURES / "gpt2"


def needs(*paths: str):
    """Skip unless these Textual fast paths are on (their comparisons with Textual are moot elsewhere)."""
    off = [p for p in paths if not getattr(FAST, p)]
    return pytest.mark.skipif(bool(off), reason=f"fast paths off: {'; '.join(sorted({FAST.why_off.get(p, p) for p in off}))}")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


async def _explorer(app, pilot) -> ExplorerScreen:
    while not isinstance(app.screen, ExplorerScreen):
        await pilot.pause(0)
    await pilot.pause(0.2)
    return app.screen


def _cells(update, y: int, x1: int, x2: int) -> list[tuple[str, Style | None]]:
    """The cells a ChopsUpdate writes on line y between x1 and x2: (character, style) each."""
    out: list[tuple[str, Style | None]] = []
    for (x, strip), end in zip(update.chops[y].items(), update.chop_ends[y]):
        if strip is None or end <= x1 or x >= x2:
            continue
        piece = strip.crop(max(x1, x) - x, min(x2, end) - x)
        out += [(ch, seg.style) for seg in piece for ch in seg.text]
    return out


@needs("compositor")
def test_sparse_compositor_sends_the_cells_textual_sends(monkeypatch):
    """Every frame while moving down and up the GPT-2 kernels: the cells in each repainted span are the ones
    Textual's compositor gives for the same regions (each frame checked; the widgets drawn once). Each move
    is shown in every pane at once (as after a pause: a run of moves waits no time here), so that each
    frame repaints much."""
    monkeypatch.setattr(list_runs, "FOLLOW_QUIET", 0.0)
    frames = []
    sparse = SparseCompositor.render_partial_update

    def both(self):
        regions = set(self._dirty_regions)
        update = sparse(self)
        if update is None:
            return None
        self._dirty_regions = regions
        full = Compositor.render_partial_update(self)
        assert full.spans == update.spans
        for y, x1, x2 in update.spans:
            assert _cells(update, y, x1, x2) == _cells(full, y, x1, x2), (y, x1, x2)
        frames.append(len(update.spans))
        return update

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            assert isinstance(screen._compositor, SparseCompositor)
            SparseCompositor.render_partial_update = both
            try:
                for key in ["down"] * 12 + ["up"] * 4 + ["3", "down", "2", "down"]:
                    await pilot.press(key)
            finally:
                SparseCompositor.render_partial_update = sparse

    asyncio.run(run())
    assert len(frames) >= 16 and sum(frames) > 16 * 40, frames  # many frames, each of many lines, compared


@needs("compositor")
@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
def test_a_full_update_sends_the_cells_textual_sends(size):
    """The explorer's full frames (its first, a zoomed pane, the layout after a resize): every cell of each
    is the one Textual's own full update gives, and the containers behind their children were not drawn."""
    from textual._compositor import LayoutUpdate

    def cells(update):
        return [[(ch, seg.style) for strip in line for seg in strip for ch in seg.text] for line in update.strips]

    async def run():
        app = make_app(str(GPT2))
        compared = 0
        async with app.run_test(size=size) as pilot:
            screen = await _explorer(app, pilot)
            compositor = screen._compositor
            for key in ["", "z", "z", "down", "3"]:
                if key:
                    await pilot.press(key)
                    await pilot.pause()
                drawn = []
                real = type(screen.query_one("#panes")).render_lines

                def counting(self, crop, real=real, drawn=drawn):
                    drawn.append(self)
                    return real(self, crop)

                type(screen.query_one("#panes")).render_lines = counting
                try:
                    ours = compositor.render_full_update()
                finally:
                    type(screen.query_one("#panes")).render_lines = real
                theirs = Compositor.render_full_update(compositor)
                assert isinstance(ours, LayoutUpdate) and ours.region == theirs.region
                assert cells(ours) == cells(theirs), key
                assert screen.query_one("#panes") not in drawn  # covered by the panes: not drawn
                compared += 1
        return compared

    assert asyncio.run(run()) == 5


def _slow(tokens, start: int, width: int, line_style: Style, dark: bool, console: Console) -> list:
    """What CodeView draws without the fast path: a Text of the tokens, rendered and cropped."""
    content = Text(style=line_style, no_wrap=True, end="")
    for ttype, value in tokens:
        content.append(value, None if ttype is None else token_style(ttype, dark))
    return list(Strip(content.render(console)).crop_extend(start, start + width, line_style))


@pytest.mark.parametrize("dark", [True, False])
def test_fast_code_lines_are_the_segments_rich_renders(dark):
    """The FX graph and a Triton kernel of GPT-2, scrolled sideways, marked or not: segment for segment."""
    graph = GPT2 / "graphs" / "0-0-inference"
    texts = [(graph / "fx_post_grad.txt").read_text()[:20000], (graph / "output_code.py").read_text()[:20000],
             "def f(x):\n    return x  # é\n\n\ty = '''a\nb'''\n"]
    texts += [k.read_text() for k in sorted((GPT2 / "kernels" / "0-0-inference").glob("*.py"))[:3]]
    console = Console(width=200, color_system="truecolor")
    base = Style(bgcolor="#1e1e1e", color="#e0e0e0")
    marked = base + Style(bgcolor="#3a3000", bold=True)
    compared = 0
    # Lines not lexed yet (type None: drawn in the view's colour, no span at all), and half lexed.
    unlexed = [[(None, "    view_2 = torch.ops.aten.view.default(x, [4, 512])")], [(None, "a "), (Token.Name, "b")],
               [(Token.Text, "")]]
    for text in [*texts, None]:
        lines = unlexed if text is None else None
        doc = TextDoc(text or "", python_lexer)
        for i in range(len(lines) if lines else min(len(doc), 300)):
            tokens = lines[i] if lines else doc.tokens(i)
            if line_runs(tokens, dark) is None:
                continue
            for line_style in (base, marked):
                for start, width in ((0, 60), (0, 200), (8, 40), (50, 30)):
                    slow = _slow(tokens, start, width, line_style, dark, console)
                    for limit in (None, start + width, start + 2 * width):  # the whole line, or runs past the window
                        runs = line_runs(tokens, dark, limit)
                        fast = cropped(runs, start, width, line_style, lambda a, b: a + b)
                        assert fast == slow, (i, start, width, limit)
                    compared += 1
    assert compared > 500


def test_offsets_are_textuals():
    strip = Strip([Segment("ab", Style(bold=True)), Segment("cde"), Segment("f", Style(color="red"))], 6)
    for x, y in ((0, 0), (5, 17), (0, 3)):
        assert list(with_offsets(strip, x, y)) == list(strip.apply_offsets(x, y))
        assert [s.style.meta for s in with_offsets(strip, x, y)] == [s.style.meta for s in strip.apply_offsets(x, y)]


def test_kernel_sources_are_lexed_while_idle_not_on_the_move(monkeypatch):
    """Opened and left alone, the explorer lexes the kernel sources ahead; moving then lexes none."""
    lexed: list[int] = []
    whole = TextDoc._lex_whole

    def counting(self, lexer):
        lexed.append(len(self.lines))
        return whole(self, lexer)

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            pane = screen.pane("kernel")
            triton = [k for k in screen.index.kernels_in_order() if k.lang != "extern" and k.source]
            docs = {(k.source, k.lang) for k in triton}
            assert len(docs) > 5
            for _ in range(50):  # idle: the sources are lexed, one per tick (~2 s; longer on a loaded machine)
                await pilot.pause(0.2)
                if all(pane._docs.get(key) is not None and pane._docs.get(key).lexed for key in docs):
                    break
            assert all(pane._docs.get(key) is not None and pane._docs.get(key).lexed for key in docs)
            monkeypatch.setattr(TextDoc, "_lex_whole", counting)
            for _ in range(30):
                await pilot.press("down")
            assert screen.kernel is not triton[0]

    asyncio.run(run())
    assert lexed == []


def test_lexing_ahead_waits_for_highlighting():
    """Before lexers may run (the first frame), lex() does nothing and the text stays unlexed."""
    doc = TextDoc("x = 1\n", kernel_lexer("triton"))
    textdoc.defer_lexers(True)
    try:
        doc.lex()
        assert not doc.lexed
    finally:
        textdoc.defer_lexers(False)
    doc.lex()
    assert doc.lexed and doc.tokens(0)[0][1] == "x"


def test_code_view_fast_path_is_used_for_plain_lines():
    """A plain ASCII line takes the fast path (its runs kept per line), a wide character the slow one."""
    view = CodeView()
    view.doc = TextDoc("a = 1\nb = '漢'\n", python_lexer)
    assert line_runs(view.doc.tokens(0), True) is not None
    assert line_runs(view.doc.tokens(1), True) is None


@needs("styles", "scrollbars")
def test_styled_lines_are_the_ones_textuals_style_pipeline_gives():
    """Every line of every scrolling widget of the explorer (code views with and without scrollbars, the
    kernel table, scrollbars) and of every pane (bordered, its rows between the borders kept as one line),
    through LineStyles' shortcuts and through Textual's StylesCache: the same segments, the same length."""
    from textual._styles_cache import StylesCache

    from kernelscope.ui.textual_private.styles import LineStyles

    async def run():
        app = make_app(str(GPT2))
        compared = 0
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            for key in ["down"] * 3:
                await pilot.press(key)
            widgets = [w for w in screen.walk_children() if isinstance(getattr(w, "_styles_cache", None), LineStyles)]
            widgets += [bar for w in list(widgets) for bar in (w._vertical_scrollbar, w._horizontal_scrollbar)
                        if bar is not None and bar.display]
            assert {w.id for w in widgets} >= {"fx", "output", "kernel", "info", "kernels", "pane-fx", "pane-kernels"}
            for widget in widgets:
                cache = widget._styles_cache
                base_background, background = widget.background_colors
                args = (widget.styles, widget.region.size, widget.content_region.size, widget.styles.padding,
                        base_background, background, widget.render_line, None, None, widget.opacity,
                        app.ansi_theme, app.native_ansi_color)
                for y in range(widget.region.height):
                    cache._frame = None
                    ours = cache.render_line(args[0], y, *args[1:])
                    theirs = StylesCache.render_line(StylesCache(), args[0], y, *args[1:])
                    assert list(ours) == list(theirs) and ours.cell_length == theirs.cell_length, (widget.id, y)
                    compared += 1
        return compared

    assert asyncio.run(run()) > 150


@needs(*PATHS)  # Textual's stock widgets allocate more per key than YOUNG lets pass: collections, not errors
def test_moving_through_kernels_runs_no_garbage_collection_and_a_pause_reclaims():
    """30 moves through GPT-2's kernels: no collection of the young generations (what each move drew is
    frozen as the next starts); after RECLAIM_AFTER moves, an idle tick collects what the freezes kept."""
    import gc

    from kernelscope.ui import gcpolicy

    collections: list[int] = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            await pilot.pause(0.3)
            gc.callbacks.append(count)
            try:
                for _ in range(30):
                    await pilot.press("down")
            finally:
                gc.callbacks.remove(count)
            policy = screen.move_gc
            assert policy.moves >= 30 and policy.reclaims == []
            policy.idle_tick()  # fewer moves than RECLAIM_AFTER: nothing
            assert policy.reclaims == []
            policy.moves, policy.last_move = gcpolicy.RECLAIM_AFTER, 0.0
            frozen = gc.get_freeze_count()
            policy.idle_tick()
            assert len(policy.reclaims) == 1 and policy.moves == 0
            assert gc.get_freeze_count() <= frozen  # unreachable objects the freezes kept are gone

    asyncio.run(run())
    assert [g for g in collections if g < 2] == [], collections


@needs("data_table")
def test_kernel_table_cells_are_the_ones_datatable_renders():
    """Every cell of the GPT-2 kernel list, as the cursor row, hovered and plain: KernelTable's kept-text
    rendering gives DataTable's own lines, segment for segment."""
    from textual.widgets import DataTable

    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def run():
        app = make_app(str(GPT2))
        compared = 0
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            table = screen.query_one(KernelTable)
            for _ in range(3):
                await pilot.press("down")
            base = table.rich_style
            for row in range(min(table.row_count, 40)):
                for column, col in enumerate(table.ordered_columns):
                    width = col.get_render_width(table)
                    for cursor, hover in ((False, False), (True, False), (False, True), (True, True)):
                        table._cell_render_cache.clear()
                        ours = table._render_cell(row, column, base, width, cursor, hover)
                        table._cell_render_cache.clear()
                        theirs = DataTable._render_cell(table, row, column, base, width, cursor, hover)
                        assert ours == theirs, (row, column, cursor, hover)
                        compared += 1
        return compared

    assert asyncio.run(run()) > 500


@needs("scrollbars")
def test_vertical_scrollbar_lines_drawn_by_segment_are_textuals():
    """The FX graph's scrollbar with its thumb at 60 places: the lines assembled from the lines of earlier
    draws (one per segment) are the lines Textual's full draw gives at that place."""
    from textual.geometry import Region
    from textual.widget import Widget

    async def run():
        app = make_app(str(GPT2))
        compared = 0
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            view = screen.query_one("#fx", CodeView)
            bar = view.vertical_scrollbar
            crop = Region(0, 0, bar.size.width, bar.size.height)
            top = max(1, int(view.max_scroll_y))
            for i in range(60):
                bar.position = top * ((i * 37) % 60) / 60  # back and forth along the track
                bar.refresh()
                ours = bar.render_lines(crop)
                bar.refresh()
                bar._styles_cache.clear()
                theirs = Widget.render_lines(bar, crop)
                assert [list(s) for s in ours] == [list(s) for s in theirs], i
                compared += 1
            assert len(bar._line_of) > 2  # lines were assembled from learnt segments
        return compared

    assert asyncio.run(run()) == 60


def _stock_component_styles(app, node, name: str):
    """A component's styles as Textual's own _process_component_classes works them out now."""
    from textual.dom import DOMNode

    virtual_node = DOMNode(classes=name)
    virtual_node._attach(node)
    app.stylesheet.apply(virtual_node, animate=False)
    return virtual_node.styles


@needs("components")
def test_component_styles_matched_on_first_use_are_textuals_and_follow_the_focus():
    """Every widget of the explorer, every component class: the styles asked for (matched on first use) are
    those Textual matches for all of them at each restyle; after the focus moves away from the kernel list,
    its cursor's component style follows, and the list is redrawn."""
    from kernelscope.ui.textual_private.components import LazyComponentStyles

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            table = screen.query_one("#kernels")
            assert isinstance(table._component_styles, LazyComponentStyles)
            unasked = len(table._get_component_classes()) - len(dict(table._component_styles))
            assert unasked > 0  # a header hover, a fixed column: not drawn, not matched
            compared = 0
            for node in screen.walk_children(with_self=True):
                for name in sorted(node._get_component_classes()):
                    assert name in node._component_styles
                    assert node.get_component_styles(name).rich_style == \
                        _stock_component_styles(app, node, name).rich_style, (node, name)
                    compared += 1
            assert compared > 40
            focused = table.get_component_rich_style("datatable--cursor")
            table.refresh_calls = 0
            original = table.refresh

            def counting_refresh(*args, **kwargs):
                table.refresh_calls += 1
                return original(*args, **kwargs)

            table.refresh = counting_refresh
            await pilot.press("3")  # the FX graph pane takes the focus
            await pilot.pause(0.1)
            assert not table.has_focus and table.refresh_calls > 0
            blurred = table.get_component_rich_style("datatable--cursor")
            assert blurred == _stock_component_styles(app, table, "datatable--cursor").rich_style
            assert blurred != focused  # DataTable:focus draws its cursor otherwise

    asyncio.run(run())


def test_a_one_line_cell_renders_as_rich_pads_it():
    """FastTableRows' short path for a Text of one line that fits: segment for segment what rich renders for
    Padding(cell) one line high without wrapping; anything else is left to rich (None)."""
    from rich.padding import Padding

    from kernelscope.ui.textual_private.data_table import _one_line

    console = Console(width=80)
    spanned = Text("gelu_0", style="bold")
    spanned.append(" ×2", style="dim")
    cells = [Text("mm"), Text(""), Text("", end=""), Text("3.7MB", style="italic"), spanned, Text("▶", style="bold"),
             Text("exactly10!"), Text("名前"), Text("x", end=""), Text.from_markup("[b]a[/b] b [i]c[/i]")]
    checked = 0
    for cell in cells:
        for width, pad in ((12, 1), (10, 0), (14, 2), (6, 1)):
            options = console.options.update_dimensions(width, 1).update(no_wrap=True)
            got = _one_line(cell, console, options, width, pad)
            if got is None:
                assert cell.cell_len > width - 2 * pad
                continue
            assert got == list(console.render(Padding(cell, (0, pad)), options)), (cell, width, pad)
            checked += 1
    assert checked > 25
    options = console.options.update_dimensions(10, 1).update(no_wrap=True)
    for other in (Text("two\nlines"), Text("a\tb"), Text("right", justify="right"), "a str", Text("wide", end="|")):
        assert _one_line(other, console, options, 10, 1) is None


def test_a_cell_measures_as_textual_measures_it():
    """The kernel list sizes its columns with a short path for Text cells: the width textual.render.measure
    gives, for every cell and label of GPT-2's list and for texts of several lines, wide or empty."""
    from textual.render import measure

    from kernelscope.ui.textual_private.data_table import _measure

    console = Console(width=80)
    texts = [Text(""), Text("a\nlonger line\nb"), Text("名前 ×2"), Text("x\r\nyy"), Text("tab\there"), Text(" pad  ")]

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _explorer(app, pilot)
            table = screen.query_one("#kernels")
            cells = [c for key in table.columns for c in table.get_column(key)] + [c.label for c in table.columns.values()]
            return cells

    cells = asyncio.run(run()) + texts
    assert len(cells) > 100
    for cell in cells:
        assert _measure(console, cell, 1) == measure(console, cell, 1), cell
    assert _measure(console, "a str", 1) == measure(console, "a str", 1)
