"""Pilot tests: the explorer on recorded bundles, driven by keys as a user would."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.ui.app import make_app
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.kernel_table import KernelTable

WIDE = (160, 48)
NARROW = (80, 24)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def drive(path, steps, size=WIDE):
    """Open ``path`` in the app and run ``await steps(pilot, app)``."""

    async def run():
        app = make_app(str(path))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def view(app, name) -> CodeView:
    return app.screen.query_one(f"#{name}", CodeView)


def screen_lines(v: CodeView) -> list[str]:
    return [v.render_line(y).text for y in range(v.scrollable_content_region.height)]


def cursor_text(v: CodeView) -> str:
    return v.doc.lines[v.cursor]


async def select(pilot, app, name: str) -> None:
    screen = app.screen
    screen.select_kernel(screen.bundle.kernel(name))
    await pilot.pause()


def test_kernels_listed_in_launch_order_with_extern_calls_in_place(ref_bundles):
    async def steps(pilot, app):
        table = app.screen.query_one(KernelTable)
        names = [table.get_row_at(i)[1].plain for i in range(table.row_count)]
        assert names[0].startswith("▾ forward 0/0 · 5")  # a graph row folds its kernels; narrow, its id and count
        # At 160x48 long names lose their decoration (the kind column says it) so the numbers after
        # them and the ops that tell them apart stay in view.
        assert names[1:6] == ["mm", "gelu_0", "mm", "sum_1", "sum_2"]
        kernel_ids = [row_id for row_id in table._row_ids if not row_id.startswith("graph:")]
        assert [app.screen.bundle.kernel(i).name for i in kernel_ids[:5]] == [
            "extern_kernels.mm", "triton_poi_fused_gelu_0", "extern_kernels.mm", "triton_red_fused_sum_1",
            "triton_per_fused_sum_2"]
        assert names[6].startswith("▾ backward 0/0 · 5")
        assert "expand_mm_0 ×2" in names
        row = table.get_row_at(2)
        assert [str(c) for c in row[2:5]] == ["poi", "5", "2.1MB"]  # 2 MiB in decimal SI
        assert "2 graphs · 10 kernels (5 Triton, 5 extern)" in str(app.screen.query_one("#summary").render())

    drive(ref_bundles["mlp_train"], steps)


def test_selecting_a_kernel_marks_its_fx_nodes_user_lines_and_launch(ref_bundles):
    async def steps(pilot, app):
        await pilot.press("down")  # from the first mm to the gelu kernel
        await pilot.pause()
        screen = app.screen
        assert screen.kernel.name == "triton_poi_fused_gelu_0"
        fx = view(app, "fx")
        assert [fx.doc.lines[i].split("=")[0].strip() for i in sorted(fx.marks)] == ["mul", "mul_1", "erf", "add",
                                                                                    "mul_2"]
        assert any(line.startswith("▶") and "mul_1 = aten.mul.Tensor" in line for line in screen_lines(fx))
        src = view(app, "source")
        assert [src.labels(i) for i in sorted(src.marks)] == ["29"]
        out = view(app, "output")
        assert "triton_poi_fused_gelu_0.run(" in cursor_text(out)
        assert "@triton.jit" in view(app, "kernel").text or "def triton_poi_fused_gelu_0" in view(app, "kernel").text
        table = screen.query_one(KernelTable)
        assert table.get_row_at(2)[0].plain == "▶"  # selection shown by a glyph, not only colour

    drive(ref_bundles["mlp_train"], steps)


def test_fx_node_leads_to_its_kernel(ref_bundles):
    async def steps(pilot, app):
        fx = view(app, "fx")
        line = next(i for i, t in enumerate(fx.doc.lines) if t.strip().startswith("sum_1 ="))
        await pilot.press("3")
        fx.move_cursor(line)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.kernel.name == "triton_red_fused_sum_1"
        await pilot.press("enter")  # the same node fed a second kernel: enter steps to it
        await pilot.pause()
        assert app.screen.kernel.name == "triton_per_fused_sum_2"

    drive(ref_bundles["mlp_train"], steps)


def test_user_line_leads_to_the_kernels_it_fed(ref_bundles):
    async def steps(pilot, app):
        src = view(app, "source")
        await pilot.press("2")
        row = next(i for i in range(len(src.doc)) if src.labels(i) == "30")
        src.move_cursor(row)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        table = screen.query_one(KernelTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        fed = {screen.bundle.kernel(table._row_ids[i]).name for i, row in enumerate(rows) if row[0] in ("◆", "▶")}
        assert {"triton_red_fused_sum_1", "triton_per_fused_sum_2"} <= fed
        assert any(u.line == 30 for u in screen.kernel.user_lines)

    drive(ref_bundles["mlp_train"], steps)


def test_output_code_jump_to_launch_and_back(ref_bundles):
    async def steps(pilot, app):
        await select(pilot, app, "triton_red_fused_sum_1")
        await pilot.press("o")
        out = view(app, "output")
        assert out.has_focus
        assert cursor_text(out).strip().startswith("triton_red_fused_sum_1.run(")
        await select(pilot, app, "triton_poi_fused_gelu_0")
        k = app.screen.bundle.kernel("triton_red_fused_sum_1")
        out.move_cursor(k.call_line - 1)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.kernel.name == "triton_red_fused_sum_1"

    drive(ref_bundles["mlp_train"], steps)


def test_extern_kernel_says_it_has_no_source(ref_bundles):
    async def steps(pilot, app):
        kv = view(app, "kernel")
        assert app.screen.kernel.name == "extern_kernels.mm"
        assert kv.is_placeholder and "extern call" in kv.text and "no generated source" in kv.text.replace("\n", " ")

    drive(ref_bundles["linear_relu"], steps)


def test_fx_views_switch_between_dynamo_aot_and_post_grad(ref_bundles):
    async def steps(pilot, app):
        await select(pilot, app, "triton_poi_fused_gelu_gelu_backward_1")
        await pilot.press("]")  # post-grad -> Dynamo (wraps)
        await pilot.pause()
        fx = view(app, "fx")
        assert app.screen.fx_kind == "fx-dynamo"
        assert "Dynamo" in app.screen.query_one("#pane-fx").border_subtitle
        await pilot.press("[", "[")  # -> AOT (the backward graph)
        await pilot.pause()
        assert app.screen.fx_kind == "fx-aot"
        assert any("tangents" in line for line in fx.doc.lines)
        assert fx.marks  # the backward kernel's nodes are marked in the backward AOT graph
        await pilot.press("a")  # as printed: type annotations come back, marks stay on the same lines
        await pilot.pause()
        assert any('"f32[' in fx.doc.lines[i] for i in fx.marks)

    drive(ref_bundles["mlp_train"], steps)


def test_graph_break_jumps_to_the_user_line(ref_bundles):
    async def steps(pilot, app):
        await pilot.press("6")
        await pilot.press("enter")
        await pilot.pause()
        src = view(app, "source")
        assert src.has_focus
        assert src.labels(src.cursor) == "22" and 'print("shape", x.shape)' in cursor_text(src)

    drive(ref_bundles["with_break"], steps)


def test_search_in_a_text_view(ref_bundles):
    async def steps(pilot, app):
        await pilot.press("5", "slash")
        await pilot.press(*"get_raw_stream")
        await pilot.press("enter")
        await pilot.pause()
        out = view(app, "output")
        assert out.has_focus and "get_raw_stream" in cursor_text(out)
        first = out.cursor
        await pilot.press("n")
        assert out.cursor > first and "get_raw_stream" in cursor_text(out)
        await pilot.press("N")
        assert out.cursor == first

    drive(ref_bundles["mlp_train"], steps)


def test_copy_theme_and_screenshot(ref_bundles, tmp_path):
    async def steps(pilot, app):
        await pilot.press("4", "y")
        assert "def triton_" in app.clipboard or "triton" in app.clipboard
        assert app.current_theme.dark
        await pilot.press("t")
        assert not app.current_theme.dark
        await pilot.press("S")
        await pilot.pause()
        shots = list((tmp_path / "cache" / "screenshots").glob("*.svg"))
        assert len(shots) == 1 and "<svg" in shots[0].read_text()

    drive(ref_bundles["add_relu"], steps)


def test_narrow_terminal_folds_panes_into_tabs(ref_bundles):
    async def steps(pilot, app):
        screen = app.screen
        assert screen.layout_mode == "tabs"
        visible = [p.id for p in screen.query(".pane") if p.display]
        assert visible == ["pane-kernels"]
        await pilot.press("3")
        await pilot.pause()
        assert [p.id for p in screen.query(".pane") if p.display] == ["pane-fx"]
        assert view(app, "fx").has_focus

    drive(ref_bundles["mlp_train"], steps, size=NARROW)


def test_presentation_mode_shows_the_story_big(ref_bundles):
    from kernelscope.ui.widgets.presentation import PresentationScreen

    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PresentationScreen)
        assert screen.query_one("#pres-right").border_title.startswith("fused kernel · triton_")
        # an opened trace's counts come from the graphs its bench runs as eager (the AOT graphs), as after a bench
        assert "eager 5 kernels / 12 transfers  →  compiled 1 kernel" in str(screen.query_one("#pres-counts").render())
        assert not screen.query("KeyFooter")
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ExplorerScreen) and app.screen.layout_mode == "wide"

    drive(ref_bundles["softmax"], steps)


def test_command_palette_jumps_to_a_kernel(ref_bundles):
    async def steps(pilot, app):
        await pilot.press("ctrl+p")
        await pilot.press(*"kernel: gelu_gelu")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ExplorerScreen)
        assert app.screen.kernel.name == "triton_poi_fused_gelu_gelu_backward_1"

    drive(ref_bundles["mlp_train"], steps)


def test_cpu_capture_marks_lines_in_the_copied_source(cpu_add_relu):
    async def steps(pilot, app):
        screen = app.screen
        assert screen.kernel.name == "cpp_fused_add_relu_0"
        src = view(app, "source")
        assert [src.doc.lines[i].strip() for i in src.marks] == ["return (a + b).relu()"]
        assert "extern \"C\"" in view(app, "kernel").text
        assert "add_relu · cpu · mode=default" in str(screen.query_one("#summary").render())

    drive(cpu_add_relu, steps)


def test_a_100k_line_artifact_renders_only_what_is_on_screen(ref_bundles, tmp_path):
    big = tmp_path / "big"
    shutil.copytree(ref_bundles["add_relu"], big)
    b = read_bundle(big)
    out_path = Path(big) / b.graphs[0].files["output_code"]
    text = out_path.read_text()
    filler = "".join(f"# padding line {i}: kernelscope must not lex this until it is on screen\n"
                     for i in range(100_000))
    out_path.write_text(text + filler)

    async def steps(pilot, app):
        await pilot.press("5", "G")
        await pilot.pause()
        out = view(app, "output")
        assert len(out.doc) > 100_000
        assert "padding line 99999" in cursor_text(out)
        assert len(out.doc._tokens) < 200  # only the lines that were shown were highlighted

    drive(big, steps)


def test_a_real_resize_lays_the_explorer_out_again_and_a_repeat_of_its_size_does_not(ref_bundles):
    """Resizes to the size the screen has are left out (the terminal reports its size as the app starts:
    Textual laid the whole explorer out again for each); a real one switches tabs <-> wide."""

    async def steps(pilot, app):
        from textual import events

        screen = app.screen
        assert isinstance(screen, ExplorerScreen) and screen.layout_mode == "tabs"
        layouts = []
        refresh = screen._refresh_layout
        screen._refresh_layout = lambda *a, **k: (layouts.append(a), refresh(*a, **k))[1]
        screen.post_message(events.Resize(app.size, app.size))
        await pilot.pause()
        assert layouts == []  # the same size again: nothing to lay out
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert screen.layout_mode == "wide" and layouts
        assert screen.query_one("#pane-kernels").region.width < 100  # beside the other panes
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert screen.layout_mode == "tabs" and screen.query_one("#pane-kernels").region.width >= 78

    drive(ref_bundles["add_relu"], steps, size=(80, 24))
