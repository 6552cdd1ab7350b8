"""The DiffView widget driven through a real Textual app (pilot)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from textual.widgets import DataTable, Static, Tabs

from kernelscope.ui.widgets.diff_view import DiffApp, DiffView


async def _settled(app, pilot):
    await app.workers.wait_for_complete()
    for _ in range(3):
        await pilot.pause()


def test_diff_view_shows_the_template_replacing_the_extern_mm(ref_bundles):
    async def scenario():
        app = DiffApp(str(ref_bundles["linear_relu"]), str(ref_bundles["linear_relu_autotune"]))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settled(app, pilot)
            view = app.query_one(DiffView)
            table = view.query_one("#diff-kernels", DataTable)
            assert table.row_count == 1
            row = [str(c) for c in table.get_row_at(0)]
            assert row[0] == "≈ replaced"
            # At 120 columns the full names would push the kind and the times off: they keep their ends.
            assert "mm" in row[1] and row[2].endswith("_threshold_backward_0"), row
            assert view.visible_entries()[0].b[0].name == "triton_tem_fused_addmm_relu_t_threshold_backward_0"
            summary = str(view.query_one("#diff-summary", Static).render())
            assert "kernels 2 -> 1, launches per call 2 -> 1" in summary
            changes = str(view.query_one("#diff-changes", Static).render())
            assert "replaces extern_kernels.mm (extern)" in changes
            tabs = view.query_one("#diff-tabs", Tabs)
            assert tabs.active == "diff-tab-source"
            assert view.shown_text.startswith("--- A/triton_poi_fused_addmm_relu_threshold_backward_0.source")
            assert "+        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)" in view.shown_text

    asyncio.run(scenario())


def test_diff_view_steps_through_kernels_and_stage_tabs(ref_bundles):
    async def scenario():
        app = DiffApp(str(ref_bundles["with_break"]), str(ref_bundles["sin_cos"]))
        async with app.run_test(size=(80, 24)) as pilot:
            await _settled(app, pilot)
            view = app.query_one(DiffView)
            table = view.query_one("#diff-kernels", DataTable)
            statuses = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert sorted(statuses) == ["- removed", "~ changed"]
            changed = statuses.index("~ changed")
            table.focus()
            table.move_cursor(row=changed)
            await pilot.pause()
            assert view.entry is not None and view.entry.status == "changed"
            tabs = view.query_one("#diff-tabs", Tabs)
            labels = [str(t.label) for t in tabs.query("Tab")]
            assert [lab.split()[0] for lab in labels] == ["source", "ttir", "ttgir", "llir", "ptx"]
            tabs.focus()
            await pilot.press("right")  # the TTIR diff
            await pilot.pause()
            assert tabs.active == "diff-tab-ttir"
            assert view.shown_text.startswith("--- A/triton_poi_fused_mul_sin_0.ttir")
            removed = statuses.index("- removed")
            table.move_cursor(row=removed)
            await pilot.pause()
            assert "only in A" in view.shown_text

    asyncio.run(scenario())


def test_diff_view_same_kernels_and_hiding_them(ref_bundles):
    async def scenario():
        app = DiffApp(str(ref_bundles["softmax"]), str(ref_bundles["softmax"]))
        async with app.run_test() as pilot:
            await _settled(app, pilot)
            view = app.query_one(DiffView)
            assert "the same in A and B" in view.shown_text
            view.query_one("#diff-kernels", DataTable).focus()
            await pilot.press("s")
            assert view.query_one("#diff-kernels", DataTable).row_count == 0

    asyncio.run(scenario())


def test_diff_view_reports_a_bad_bundle_in_one_line(tmp_path, ref_bundles):
    async def scenario():
        app = DiffApp(str(tmp_path / "missing"), str(ref_bundles["add_relu"]))
        async with app.run_test() as pilot:
            await _settled(app, pilot)
            text = str(app.query_one("#diff-summary", Static).render())
            assert text.startswith("cannot compare:") and "no such bundle folder" in text

    asyncio.run(scenario())


def test_diff_view_imports_no_torch():
    code = "import sys, kernelscope.ui.widgets.diff_view; assert 'torch' not in sys.modules, 'torch imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
