"""Pilot tests: the explorer's and the editor's keys do what their footers say (issue 11).

Driven on the GPU captures in tests/fixtures/gpu (read on the CPU), at 80x24 and 160x48.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import TextArea

from kernelscope.ui.app import make_app
from kernelscope.ui.screens.dialogs import ConfirmScreen
from kernelscope.ui.screens.editor import EditorScreen
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.screens.gallery import GalleryScreen
from kernelscope.ui.widgets.code_view import CodeView

from .conftest import GPU_FIXTURES

WIDE = (160, 48)
NARROW = (80, 24)
PANE_IDS = ("kernels", "source", "fx", "kernel", "output", "breaks", "info")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def drive(path, steps, size):
    async def run():
        app = make_app(str(path))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def visible_panes(screen) -> list[str]:
    return [p for p in PANE_IDS if screen.query_one(f"#pane-{p}").region.area]


@pytest.mark.parametrize("key", ["q", "escape"])
@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_leaving_an_explorer_opened_on_a_bundle_shows_the_gallery(key, size):
    # It used to crash: the gallery's preview rendered before its first document, with a gutter 0 wide.
    async def steps(pilot, app):
        assert isinstance(app.screen, ExplorerScreen)
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, GalleryScreen)
        preview = app.screen.query_one("#preview", CodeView)
        shown = [preview.render_line(y).text for y in range(preview.scrollable_content_region.height)]
        assert any("def " in line for line in shown), shown  # the first sample's source, with line numbers
        assert any(line.lstrip().startswith("1 │") for line in shown)

    drive(GPU_FIXTURES / "add_relu", steps, size)


def test_a_code_view_with_no_document_yet_renders_an_empty_numbered_line():
    from textual.app import App

    class One(App):
        def compose(self):
            yield CodeView(id="v")

    async def run():
        app = One()
        async with app.run_test(size=(40, 5)) as pilot:
            await pilot.pause()
            assert app.query_one(CodeView).render_line(0).text[1:].startswith("1 │")  # after the cursor glyph

    asyncio.run(run())


def test_escape_leaves_the_editor_and_asks_first_when_edits_would_be_lost():
    sample = Path(__file__).resolve().parents[1] / "samples" / "add_relu.py"
    original = sample.read_text()

    async def steps(pilot, app):
        explorer = app.screen
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen)
        assert app.screen.focused is app.screen.query_one(TextArea)
        await pilot.press("escape")  # nothing edited: straight back
        await pilot.pause()
        assert app.screen is explorer

        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        await pilot.press("end", "#", " ", "x")  # an edit, in neither the scratch copy nor the user's file
        await pilot.pause()
        assert "# x" in editor.text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "lose your edits" in str(app.screen.query_one("Static").render())
        await pilot.press("n")  # stay: the edit is still there
        await pilot.pause()
        assert app.screen is editor and "# x" in editor.text
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is explorer
        assert sample.read_text() == original

    drive(GPU_FIXTURES / "add_relu", steps, WIDE)


@pytest.mark.parametrize("key, pane", [(None, "kernels"), ("3", "fx"), ("4", "kernel")])
def test_z_zooms_the_focused_pane_to_the_whole_body_and_z_again_restores(key, pane):
    async def steps(pilot, app):
        screen = app.screen
        if key:
            await pilot.press(key)
        assert len(visible_panes(screen)) == 7
        await pilot.press("z")
        await pilot.pause()
        assert visible_panes(screen) == [pane]
        region = screen.query_one(f"#pane-{pane}").region
        assert region.width == WIDE[0] and region.height >= WIDE[1] - 2  # all but the footer's line
        assert screen.focused.id == pane
        await pilot.press("z")
        await pilot.pause()
        assert len(visible_panes(screen)) == 7
        assert screen.query_one(f"#pane-{pane}").region.width < WIDE[0] // 2

    drive(GPU_FIXTURES / "softmax", steps, WIDE)


def test_escape_on_a_zoomed_pane_restores_the_layout_before_leaving():
    async def steps(pilot, app):
        await pilot.press("4", "z")
        await pilot.pause()
        assert visible_panes(app.screen) == ["kernel"]
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ExplorerScreen) and len(visible_panes(app.screen)) == 7

    drive(GPU_FIXTURES / "softmax", steps, WIDE)


def test_the_footer_at_80x24_shows_pipeline_bench_and_diff():
    async def steps(pilot, app):
        await pilot.pause(0.2)
        footer = app.screen.query_one("KeyFooter")
        shown = [(k.key_display, k.description) for k in footer.items if k.end <= NARROW[0]]
        # The focused kernel table's keys first, then ? (every key), how to leave, then pipeline, bench and diff.
        assert shown[:8] == [("⏎", "Kernel"), ("y", "Copy"), ("/", "Find"), ("?", "Keys"), ("esc", "Back"),
                             ("p", "Pipeline"), ("b", "Bench"), ("d", "Diff")], shown

    drive(GPU_FIXTURES / "softmax", steps, NARROW)


def test_tab_mode_enter_on_an_fx_node_goes_to_its_kernel():
    async def steps(pilot, app):
        screen = app.screen
        assert screen.kernel.name == "extern_kernels.mm"
        gelu = screen.bundle.kernel("triton_poi_fused_gelu_0")
        await pilot.press("3")  # the FX tab, post-grad graph of the forward
        await pilot.pause()
        fx = screen.query_one("#fx", CodeView)
        line = screen.index.fx_lines_for_kernel(gelu, screen.graph, screen.fx_kind)[0]
        fx.move_cursor(line - 1)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.kernel is gelu
        assert visible_panes(screen) == ["kernel"] and screen.focused.id == "kernel"
        assert "def triton_poi_fused_gelu_0" in "\n".join(screen.query_one("#kernel", CodeView).doc.lines)
        assert "gelu_0" in str(screen.query_one("#pane-kernel").border_subtitle)

    drive(GPU_FIXTURES / "mlp_train", steps, NARROW)


def test_tab_mode_enter_on_a_source_line_goes_to_its_kernel():
    async def steps(pilot, app):
        screen = app.screen
        await pilot.press("2")
        await pilot.pause()
        source = screen.query_one("#source", CodeView)
        (row,) = [i for i, text in enumerate(source.doc.lines) if "torch.softmax" in text]
        source.move_cursor(row)
        await pilot.press("enter")
        await pilot.pause()
        assert visible_panes(screen) == ["kernel"] and screen.focused.id == "kernel"
        assert screen.kernel.name == "triton_per_fused__softmax_exp_prepare_softmax_online_sub_0"
        await pilot.press("2")  # back where it was
        await pilot.pause()
        assert visible_panes(screen) == ["source"] and "torch.softmax" in source.doc.lines[source.cursor]

    drive(GPU_FIXTURES / "softmax", steps, NARROW)
