"""Pilot tests at 80x24: every line a newcomer reads fits or breaks at a word (never inside a name, a path
or a number), the keys offered are the keys that work, and a dead end says what it is."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from kernelscope.ui.app import make_app

from .conftest import GPU_FIXTURES, REPO

NARROW = (80, 24)
TWO_CALLS = REPO / "tests" / "fixtures" / "cpu" / "add_relu_two_calls"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def drive(what, steps, size=NARROW):
    async def run():
        app = make_app(str(what) if what is not None else None)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def rendered(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def until(pilot, predicate, timeout: float = 10) -> None:
    import time

    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting for the UI"
        await pilot.pause(0.1)


def test_the_gallery_title_fits_and_says_how_to_open():
    async def steps(pilot, app):
        title = rendered(app, "#summary")
        assert title == "kernelscope · Pick a sample (enter captures it), or open a capture (o).", title
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert "what did torch.compile do to your function?" in rendered(app, "#summary")

    drive(None, steps)


def test_open_of_a_missing_folder_says_no_such_folder_and_starts_no_capture(tmp_path):
    from kernelscope.ui.screens.gallery import GalleryScreen

    async def steps(pilot, app):
        from textual.widgets import Input

        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.focused, Input)
        app.focused.value = str(tmp_path / "gone")  # as typed (a key at a time: seconds of make test-fast)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, GalleryScreen)
        assert any(n.startswith(f"no such folder or file: {tmp_path / 'gone'}") for n in notices(app)), notices(app)
        assert not any("name the function too" in n for n in notices(app))

    drive(None, steps)


def test_the_editor_on_a_shipped_sample_saves_as_a_new_file_and_leaves_the_sample(tmp_path):
    from kernelscope.ui.screens.dialogs import PromptScreen
    from kernelscope.ui.screens.editor import EditorScreen

    async def steps(pilot, app):
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditorScreen))
        await pilot.pause(0.2)
        editor = app.screen
        sample = editor.origin_file
        shipped = sample.read_text()
        status = rendered(app, "#editor-status")
        assert len(status) <= NARROW[0] - 2 and "ctrl+s" in status, status
        assert len(rendered(app, "#summary")) <= NARROW[0] - 2
        footer = [f"{k.key_display} {k.description}" for k in app.screen.query_one("KeyFooter").items]
        assert "^s Save as…" in footer and not any("Save to your file" in f for f in footer), footer
        editor.query_one("TextArea").insert("# mine\n", (0, 0))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen))
        prompt = app.screen.query_one("Input")
        prompt.value = str(tmp_path / "mine.py")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert (tmp_path / "mine.py").read_text().startswith("# mine\n")
        assert sample.read_text() == shipped
        assert any(n.startswith(f"saved {tmp_path / 'mine.py'}") for n in notices(app)), notices(app)

    drive(None, steps)


def _failed_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "failed"
    shutil.copytree(TWO_CALLS, folder)
    data = json.loads((folder / "bundle.json").read_text())
    data["status"] = "failed"
    data["error"] = ("the program exited with status 1: RuntimeError: loss went NaN at step 3 (the traceback "
                     "is in the bundle's logs/stderr.txt)")
    (folder / "bundle.json").write_text(json.dumps(data))
    return folder


def test_a_failed_bundles_header_keeps_the_error_in_whole_words(tmp_path):
    async def steps(pilot, app):
        header = rendered(app, "#summary")
        assert len(header) <= NARROW[0] - 2 and header.endswith(" │  ✗ FAILED"), header  # not "exited with"
        await pilot.resize_terminal(100, 24)
        await pilot.pause()
        assert rendered(app, "#summary").endswith(" │ ✗ FAILED: loss went NaN at step 3"), rendered(app, "#summary")
        await pilot.resize_terminal(120, 24)
        await pilot.pause()
        assert rendered(app, "#summary").endswith("  │  ✗ FAILED: RuntimeError: loss went NaN at step 3")
        await pilot.resize_terminal(*NARROW)
        await pilot.press("7")
        await pilot.pause()
        from .test_ui_newcomer import screen_rows

        info = app.screen.query_one("#info")
        info.move_cursor(next(i for i, line in enumerate(info.doc.text.splitlines()) if line.startswith("status")),
                         center=True)
        await pilot.pause()
        rows = [r.rstrip() for r in screen_rows(app)]
        at = next(i for i, r in enumerate(rows) if "│ status      failed: the program exited with" in r)
        assert rows[at + 1].endswith("│             status 1: RuntimeError: loss went"), rows[at:at + 4]

    drive(_failed_copy(tmp_path), steps)


def test_the_info_pane_breaks_a_launch_between_its_arguments():
    async def steps(pilot, app):
        await pilot.press("7")
        await pilot.pause()
        from .test_ui_newcomer import screen_rows

        rows = screen_rows(app)
        assert any(r.rstrip().endswith("│ launch      cpp_fused_add_relu_0(arg0_1,") for r in rows), rows
        assert any(r.rstrip().endswith("│             arg1_1, buf0)") for r in rows), rows  # not "arg1_" / "1, buf0)"

    drive(TWO_CALLS, steps)


def test_the_explorer_footer_says_how_to_leave_and_m_reads_next_mark():
    async def steps(pilot, app):
        footer = [f"{k.key_display} {k.description}" for k in app.screen.query_one("KeyFooter").items
                  if k.end <= NARROW[0]]
        assert "esc Back" in footer, footer
        await pilot.press("5")
        await pilot.pause()
        footer = [f"{k.key_display} {k.description}" for k in app.screen.query_one("KeyFooter").items]
        assert "m Next mark" in footer and "m Mark" not in footer, footer

    drive(TWO_CALLS, steps)


def test_m_in_a_pane_without_marks_says_so():
    from kernelscope.ui.widgets.code_view import CodeView

    async def steps(pilot, app):
        await pilot.press("5")
        await pilot.pause()
        view = app.focused
        assert isinstance(view, CodeView)
        view.set_marks(range(0))
        await pilot.press("m")
        await pilot.pause()
        assert any(n.startswith("no marked lines in this pane") for n in notices(app)), notices(app)

    drive(TWO_CALLS, steps)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_bench_views_k_is_offered_with_a_gpu_only_and_opens_ready_for_the_value(device, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_DEVICE", device)

    async def steps(pilot, app):
        await pilot.press("b")
        await pilot.pause()
        footer = [k.key_display for k in app.screen.query_one("KeyFooter").items]
        status = rendered(app, "#bench-status")
        if device == "cpu":  # k reruns one Triton kernel: it needs a CUDA GPU
            assert "k" not in footer and "k: one kernel" not in status, (footer, status)
            await pilot.press("k")
            await pilot.pause()
            assert not app.screen.query_one("#bench-kernel").has_class("-shown")
            return
        assert "k" in footer and "k: one kernel" in status, (footer, status)
        await pilot.press("k")
        await pilot.pause()
        box = app.screen.query_one("#bench-kernel")
        assert box.value == "triton_poi_fused_add_relu_0 XBLOCK="
        await pilot.press("5", "1", "2")
        assert box.value == "triton_poi_fused_add_relu_0 XBLOCK=512"  # typed after the name, not over it

    drive(GPU_FIXTURES / "add_relu", steps)


def test_the_bench_views_count_explanation_wraps_under_its_column(tmp_path):
    from textual.widgets import Static

    folder = tmp_path / "benched"
    shutil.copytree(GPU_FIXTURES / "softmax_bench_cpu", folder)
    data = json.loads((folder / "bundle.json").read_text())
    run = data["extra"]["bench"]["run"]
    run["counts_explained"] = {  # as bench/explain.py words a CPU run's counts
        "eager": {"computed": 4, "measured": 2, "reasons": [
            "2 ops launched nothing measured: views and reshapes of contiguous tensors, ops on Python numbers, "
            "or ops fused inside another library call (linear = addmm)"]},
        "compiled": {"computed": 1, "measured": 2, "reasons": [
            "+1: cpp_fused_add_relu_0 (a kernel no launch of the bundle claimed)"]}}
    (folder / "bundle.json").write_text(json.dumps(data))

    async def steps(pilot, app):
        await pilot.press("b")
        await pilot.pause(0.5)
        lines = str(app.screen.query_one("#bench-text", Static).render()).splitlines()
        shown = app.screen.query_one("#bench-scroll").size.width - 2
        at = next(i for i, line in enumerate(lines) if "+1:" in line)
        assert lines[at].split()[:3] == ["compiled", "1", "2"], lines[at]
        column = lines[at].index("+1:")
        assert lines[at].endswith("+1: cpp_fused_add_relu_0 (a kernel no"), lines[at:at + 2]
        assert lines[at + 1] == " " * column + "launch of the bundle claimed)", lines[at:at + 2]
        eager = next(i for i, line in enumerate(lines) if "ops launched nothing measured" in line)
        assert all(len(line) <= shown for line in lines[eager:at + 2]), lines[eager:at + 2]
        # a number keeps its unit on its line
        assert not any(line.rstrip().endswith(tuple("0123456789")) and lines[i + 1].strip().startswith(("µs", "ms"))
                       for i, line in enumerate(lines[:-1])), lines

    drive(folder, steps)


def test_the_pipeline_on_the_triton_source_names_its_line_and_keeps_question_mark_at_sass():
    from kernelscope.ui.widgets.pipeline_view import PipelineView

    async def steps(pilot, app):
        await pilot.press("p")
        await pilot.pause()
        view = app.screen.query_one(PipelineView)
        await until(pilot, lambda: bool(view.stages), 60)
        assert view.status_text == "Triton source line 1", view.status_text  # not "← source line 1"
        await pilot.press("[")  # wraps to SASS
        await pilot.pause()
        assert view.status_text == "SASS line 1: no source line (none recorded for it)", view.status_text
        labels = app.screen.query_one("KeyFooter").labels()
        assert "? Keys" in labels and "a raw SASS" in labels, labels
        await pilot.press("a")
        await pilot.pause()
        labels = app.screen.query_one("KeyFooter").labels()
        assert "? Keys" in labels and "a compact" in labels, labels

    drive(GPU_FIXTURES / "add_relu", steps)


def test_presentation_of_an_edited_capture_names_its_file_not_the_scratch_path(tmp_path):
    folder = tmp_path / "edited"
    shutil.copytree(TWO_CALLS, folder)
    data = json.loads((folder / "bundle.json").read_text())
    data["target"]["spec"] = "/root/.cache/kernelscope/scratch/add_relu-3f9a2c41d0/add_relu.py::add_relu"
    (folder / "bundle.json").write_text(json.dumps(data))

    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause(0.3)
        heading = rendered(app, "#pres-heading")
        assert heading.startswith("add_relu.py::add_relu · 2 calls: (f32[64], f32[64])"), heading
        assert "scratch" not in heading

    drive(folder, steps)


@pytest.mark.parametrize("capture, listed", [(TWO_CALLS, False), (GPU_FIXTURES / "tiny_gpt", True)])
def test_the_source_files_list_is_a_tab_stop_only_for_a_capture_of_several_files(capture, listed):
    from kernelscope.ui.widgets.source_files import SourceFiles

    async def steps(pilot, app):
        stops = [w for w in app.screen.focus_chain if isinstance(w, SourceFiles)]
        assert bool(stops) == listed, app.screen.focus_chain

    drive(capture, steps, size=(160, 48))


def test_a_launch_breaks_between_arguments_or_after_a_call_never_inside_a_name():
    from kernelscope.ui.summary import wrapped_fact

    lines = wrapped_fact("launch", "extern_kernels.addmm(primals_2, primals_3, reinterpret_tensor(primals_1, "
                                   "(16, 32), (1, 16), 0), alpha=1, beta=1, out=buf0)")
    assert lines[:3] == ["launch      extern_kernels.addmm(primals_2,", " " * 12 + "primals_3,",
                         " " * 12 + "reinterpret_tensor(primals_1,"], lines  # not "reinterpret_" / "tensor("
    lines = wrapped_fact("launch", "triton_poi_fused_mul_sin_0.run(arg0_1, buf0, 1024, stream=stream0)")
    assert lines[0] == "launch      triton_poi_fused_mul_sin_0.run(", lines  # not "..._mul_sin_" / "0.run("


def test_a_kernel_with_no_fx_nodes_says_why_in_info_and_show(tmp_path):
    from .conftest import kernelscope_cmd

    folder = tmp_path / "bare"
    shutil.copytree(TWO_CALLS, folder)
    data = json.loads((folder / "bundle.json").read_text())
    k = data["kernels"][0]
    k["fx_nodes"], k["fx_nodes_pre"], k["provenance"] = [], [], "comments"
    for li in k["launch_info"]:
        li["fx_nodes"], li["fx_nodes_pre"] = [], []
    (folder / "bundle.json").write_text(json.dumps(data))
    shown = kernelscope_cmd("show", str(folder)).stdout
    assert "fx nodes: none named: neither Inductor's provenance tracking nor the output code's source-node " \
           "comments name what it fused" in shown, shown

    async def steps(pilot, app):
        from .test_ui_newcomer import screen_rows

        await pilot.press("7")
        await pilot.pause()
        rows = [r.rstrip() for r in screen_rows(app)]
        at = next(i for i, r in enumerate(rows) if "│ fx nodes    none named: neither Inductor's" in r)
        assert rows[at + 1].endswith("│             provenance tracking nor the output"), rows[at:at + 3]
        assert all(len(r) <= NARROW[0] for r in rows)

    drive(folder, steps)


def test_the_job_view_wraps_a_recompiles_reason_under_its_column():
    async def steps(pilot, app):
        await pilot.press("J")
        await pilot.pause(0.3)
        lines = app.screen.query_one("#job-text").doc.text.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("    recompiled because"))
        assert lines[at].startswith("    recompiled because        0/0: tensor 'a' size mismatch"), lines[at]
        assert lines[at + 1].startswith(" " * 30) and lines[at + 1].strip(), lines[at:at + 3]
        assert all(len(line) <= NARROW[0] - 10 for line in lines[at:at + 3]), lines[at:at + 3]
        # enter on the reason's second line still opens that compile's graph
        assert app.screen.graph_at[at + 1] == app.screen.graph_at[at]

    drive(TWO_CALLS, steps)


def test_show_job_says_what_a_capture_did_not_record_instead_of_a_question_mark():
    from .conftest import kernelscope_cmd

    shown = kernelscope_cmd("show", str(TWO_CALLS), "--job").stdout
    assert "    compile time, cache       no compile record" in shown, shown
    assert "    guards                    no compile record" in shown, shown
    assert not any(line.rstrip().endswith(" ?") for line in shown.splitlines()), shown


def test_the_kernel_lists_names_fit_again_after_a_zoom_or_a_narrow_terminal():
    """DataTable.clear keeps each column as wide as its widest cell ever was: after z z (or 160 -> 80 -> 160
    columns) the name column stayed zoomed-wide, names cut and the other columns pushed off the pane."""
    from textual.widgets.data_table import ColumnKey

    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def run():
        app = make_app(str(GPU_FIXTURES / "gpt2"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            table = app.screen.query_one(KernelTable)
            layout = lambda: (table.columns[ColumnKey("name")].content_width, table.max_scroll_x)  # noqa: E731
            start = layout()
            assert start[1] == 0
            await pilot.press("z")
            await pilot.pause(0.3)
            assert layout()[0] > start[0]  # zoomed: the names whole
            await pilot.press("z")
            await pilot.pause(0.3)
            assert layout() == start
            await pilot.resize_terminal(80, 24)
            await pilot.pause(0.3)
            await pilot.resize_terminal(160, 48)
            await pilot.pause(0.3)
            assert layout() == start

    asyncio.run(run())
