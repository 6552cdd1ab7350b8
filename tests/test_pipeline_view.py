"""Pilot tests of the pipeline view on add_relu's real artifacts: stepping, side by side, mapping, passes."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.passes import load_pass_file, write_pass_logs
from kernelscope.ui.widgets.pipeline_view import PipelineView

from .conftest import REFERENCE

DUMP = REFERENCE / "add_relu_passes" / "mlir_passes.txt"


class PipelineApp(App):
    def __init__(self, bundle, kernel, **kw):
        super().__init__()
        self.view_args = (bundle, kernel)
        self.view_kw = kw

    def compose(self) -> ComposeResult:
        yield PipelineView(*self.view_args, **self.view_kw)


@pytest.fixture(scope="module")
def add_relu(ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    return bundle, bundle.kernel("triton_poi_fused_add_relu_0")


async def _ready(pilot, view: PipelineView):
    for _ in range(100):
        if view.stages:
            return
        await pilot.pause(0.05)
    raise AssertionError("stages never loaded")


def test_step_through_stages_and_map_the_load(add_relu):
    asyncio.run(_step_through_stages_and_map_the_load(add_relu))


async def _step_through_stages_and_map_the_load(add_relu):
    app = PipelineApp(*add_relu)
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(PipelineView)
        await _ready(pilot, view)
        assert view.current.stage == "source"
        assert view.left.border_title == "Triton source"
        await pilot.press("]")
        assert view.current.stage == "ttir" and "tt.load" in "\n".join(view.left.lines)
        await pilot.press("[", "[")
        assert view.current.stage == "sass"  # wraps around
        await pilot.press("]")
        # side by side: source on the left, the other pane stepped to PTX
        await pilot.press("s")
        assert view.split and app.query_one("#pv-right").display
        assert view.other.stage == "ttgir"  # moved off TTIR when the left pane stepped onto it
        await pilot.press("}", "}")
        assert view.other.stage == "ptx"
        view.left.focus()
        view.left.cursor_line = 24
        await pilot.pause()
        marked = [view.right.lines[n - 1] for n in sorted(view.right.marked)]
        assert any("ld.global" in t for t in marked), marked
        assert "source line 24" in view.status_text
        # and back: the cursor on a PTX ld.global marks source line 24
        view.right.focus()
        view.right.cursor_line = next(i for i, t in enumerate(view.right.lines, 1) if "ld.global" in t)
        await pilot.pause()
        assert view.left.marked == {24}


def test_unified_diff_between_two_stages(add_relu):
    asyncio.run(_unified_diff_between_two_stages(add_relu))


async def _unified_diff_between_two_stages(add_relu):
    app = PipelineApp(*add_relu)
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(PipelineView)
        await _ready(pilot, view)
        view.select_stage("ttgir")  # d diffs the stage before it against it: TTIR → TTGIR
        await pilot.press("d")
        text = "\n".join(view.left.lines)
        assert view.left.lexer_name == "diff"
        assert text.startswith("--- TTIR\n+++ TTGIR")
        assert any(ln.startswith("+") and "#blocked" in ln for ln in view.left.lines)


def test_large_text_renders_only_visible_lines(add_relu):
    asyncio.run(_large_text_renders_only_visible_lines(add_relu))


async def _large_text_renders_only_visible_lines(add_relu):
    app = PipelineApp(*add_relu)
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(PipelineView)
        await _ready(pilot, view)
        pane = view.left
        pane.set_text(
            "\n".join(f"  /*{i:04x}*/   FFMA R{i % 200}, R1, R2, R3 ;" for i in range(200_000)), "sass", "big"
        )
        await pilot.pause()
        assert len(pane._strips) < 100  # highlighted lazily, visible rows only
        pane.focus()
        await pilot.press("end")
        assert pane.cursor_line == 200_000 and pane.scroll_offset.y > 199_900


def test_passes_mode_with_changed_filter_and_diff(add_relu, tmp_path):
    asyncio.run(_passes_mode_with_changed_filter_and_diff(add_relu, tmp_path))


async def _passes_mode_with_changed_filter_and_diff(add_relu, tmp_path):
    bundle, kernel = add_relu
    # Store the reference dump as the captured passes of the kernel's first variant.
    # Inside the bundle: a path that leads outside it is refused (issue 14).
    stored = Path(bundle.root) / "test-passes"
    write_pass_logs(load_pass_file(DUMP), stored)
    variant = kernel.triton[0]
    saved = dict(variant.files)
    variant.files["passes"] = "test-passes/passes.json"
    try:
        app = PipelineApp(bundle, kernel, variant=variant)
        async with app.run_test(size=(160, 40)) as pilot:
            view = app.query_one(PipelineView)
            await _ready(pilot, view)
            await pilot.press("p")
            for _ in range(100):
                if view.logs:
                    break
                await pilot.pause(0.05)
            await pilot.pause()
            assert len(view.visible_passes) == 77
            assert "MLIR passes (77)" in view.left.border_title
            await pilot.press("c")
            changed = len(view.visible_passes)
            assert 0 < changed < 77 and all(p.changed for p in view.visible_passes)
            view.left.focus()
            row = next(i for i, p in enumerate(view.visible_passes, 1) if p.name == "ConvertTritonToTritonGPU")
            view.left.cursor_line = row
            await pilot.pause()
            assert view.right.lexer_name == "diff"
            assert any(ln.startswith("+") for ln in view.right.lines)
            assert any(ln.startswith("-") for ln in view.right.lines)
            await pilot.press("v")
            assert view.right.border_title == "before: ConvertTritonToTritonGPU"
            await pilot.press("p")
            assert view.mode == "stages"
    finally:
        variant.files = saved
        shutil.rmtree(stored, ignore_errors=True)


def test_widget_import_pulls_in_neither_torch_nor_triton():
    code = (
        "import sys, kernelscope.ui.widgets.pipeline_view, kernelscope.pipeline.artifacts; "
        "bad = [m for m in ('torch', 'triton') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_passes_failure_is_shown_not_raised(add_relu):
    asyncio.run(_passes_failure_is_shown_not_raised(add_relu))


async def _passes_failure_is_shown_not_raised(add_relu):
    bundle, kernel = add_relu
    variant = kernel.triton[0]
    saved = dict(variant.files)
    for stage in ("source", "ttir"):
        variant.files.pop(stage, None)
    try:
        app = PipelineApp(bundle, kernel, variant=variant)
        async with app.run_test(size=(120, 30)) as pilot:
            view = app.query_one(PipelineView)
            await _ready(pilot, view)
            assert view.stages[1].missing  # no TTIR: a placeholder, the view still works
            await pilot.press("]")
            assert view.left.lines[0].startswith("[TTIR not available: no .ttir file")
            await pilot.press("p")
            for _ in range(100):
                if "passes unavailable" in view.status_text:
                    break
                await pilot.pause(0.05)
            assert "neither the .source nor the .ttir MLIR" in view.status_text
            assert view.left.lines[0].startswith("[passes not available:")
    finally:
        variant.files = saved
