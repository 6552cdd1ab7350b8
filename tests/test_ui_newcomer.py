"""Pilot tests of what a newcomer hit in one sitting at 80x24 (issue 23): the right screen after a
--fullgraph break, capture ticks, keys that did nothing, feedback where there was none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import OptionList

from kernelscope.ui.app import make_app
from kernelscope.ui.screens.explorer import ExplorerScreen

from .conftest import GPU_FIXTURES, kernelscope_cmd

NARROW = (80, 24)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def fullgraph_break(tmp_path_factory) -> Path:
    """`kernelscope capture graph_break --fullgraph --device cpu`: Dynamo raises at the print."""
    out = tmp_path_factory.mktemp("fullgraph") / "graph_break"
    proc = kernelscope_cmd("capture", "graph_break", "--fullgraph", "--device", "cpu", "-o", str(out), "-q")
    assert proc.returncode != 0 and "graph break under --fullgraph" in proc.stderr, proc.stderr
    return out


def drive(path, steps, size=NARROW):
    async def run():
        app = make_app(str(path))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def option_texts(option_list: OptionList) -> list[str]:
    return [str(option_list.get_option_at_index(i).prompt) for i in range(option_list.option_count)]


def test_a_fullgraph_break_is_in_show_and_in_the_breaks_pane(fullgraph_break):
    proc = kernelscope_cmd("show", str(fullgraph_break))
    assert "graph breaks (1):" in proc.stdout, proc.stdout
    assert 'graph_break.py:8: Dynamo does not know how to trace builtin operator `print`' in proc.stdout
    assert '[print("shape", x.shape)]' in proc.stdout

    async def steps(pilot, app):
        assert isinstance(app.screen, ExplorerScreen)
        await pilot.press("6")
        await pilot.pause()
        rows = option_texts(app.screen.query_one("#breaks", OptionList))
        assert rows and rows[0].startswith("⚠ break  graph_break.py:8  Dynamo does not know how to trace"), rows
        assert not any("no graph breaks" in r for r in rows)

    drive(fullgraph_break, steps)


def _phases(app) -> str:
    return str(app.screen.query_one("#cap-phases").render())


async def _wait(pilot, predicate, timeout: float) -> None:
    import time

    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting for the UI"
        await pilot.pause(0.2)


def _run_capture(request, steps, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")
    app = make_app(request=request)

    async def run():
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_a_fullgraph_failure_marks_compile_not_collect_and_names_the_checkbox(monkeypatch):
    from kernelscope.ui.capture_request import CaptureRequest
    from kernelscope.ui.screens.capture import CaptureScreen

    async def steps(pilot, app):
        await _wait(pilot, lambda: isinstance(app.screen, CaptureScreen) and app.screen.state == "failed", 90)
        phases = _phases(app)
        assert "✗ compile" in phases and "✓ collect" in phases, phases
        status = str(app.screen.query_one("#cap-status").render())
        assert "untick fullgraph in the options (o)" in status and "--fullgraph" not in status, status

    _run_capture(CaptureRequest(target="graph_break", fullgraph=True, device="cpu"), steps, monkeypatch)


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_a_cancel_leaves_the_phase_it_stopped_without_a_tick(monkeypatch):
    from kernelscope.ui.capture_request import CaptureRequest
    from kernelscope.ui.screens.capture import CaptureScreen

    async def steps(pilot, app):
        screen = app.screen
        await _wait(pilot, lambda: any(e.get("phase") == "compile" for e in screen.events), 90)
        await pilot.press("escape")
        await _wait(pilot, lambda: screen.state == "cancelled", 30)
        phases = _phases(app)
        assert "■ compile" in phases and "✓ compile" not in phases, phases
        assert isinstance(screen, CaptureScreen)

    _run_capture(CaptureRequest(target="softmax", device="cpu"), steps, monkeypatch)


def test_the_options_form_offers_timeout_and_passes_and_rejects_a_bad_timeout():
    from textual.widgets import Checkbox, Input

    from kernelscope.ui.capture_request import CaptureRequest
    from kernelscope.ui.screens.options import OptionsScreen

    async def run():
        app = make_app()
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            got = []
            app.push_screen(OptionsScreen(CaptureRequest(target="add_relu", device="cpu")), got.append)
            await pilot.pause()
            form = app.screen
            form.query_one("#opt-timeout", Input).value = "soon"
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert "timeout must be a positive number of seconds" in str(form.query_one("#opt-error").render())
            form.query_one("#opt-timeout", Input).value = "90"
            form.query_one("#opt-passes", Checkbox).value = True
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert got and got[0].timeout == 90 and got[0].passes

    asyncio.run(run())


def test_a_talk_says_its_last_step_is_the_end_and_q_ends_it():
    from kernelscope.ui.app import KernelscopeApp
    from kernelscope.ui.talk import DEFAULT_TALK, load_talk

    talk = load_talk(DEFAULT_TALK)
    app = KernelscopeApp(talk=talk)

    async def run():
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            await app.talk_show(len(talk.steps) - 1)
            await pilot.pause()
            banner = str(app.screen.query_one(".talk-banner").render())
            assert banner.startswith(f"{len(talk.steps)}/{len(talk.steps)} · "), banner
            assert "(the last step: q ends the talk)" in banner.splitlines()[0], banner
            await pilot.press("space")
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert any("that was the last step: q ends the talk" in m for m in said), said
            await pilot.press("q")
            await pilot.pause()
            assert app.return_code is not None or not app.is_running

    asyncio.run(run())


def test_presentation_of_a_one_kernel_capture_has_no_stepping_noise():
    from kernelscope.ui.widgets.presentation import PresentationScreen

    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PresentationScreen)
        heading = str(app.screen.query_one("#pres-heading").render())
        assert "(kernel 1 of 1" not in heading and ": , .)" not in heading, heading
        assert heading.startswith("add_relu"), heading

    drive(GPU_FIXTURES / "add_relu", steps)


def test_presentation_of_a_many_kernel_capture_says_how_to_step():
    from kernelscope.ui.widgets.presentation import PresentationScreen

    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PresentationScreen)
        heading = str(app.screen.query_one("#pres-heading").render())
        assert "(kernel 1 of " in heading and "· , and . step)" in heading, heading

    drive(GPU_FIXTURES / "graph_break", steps)


def test_the_header_of_a_preview_keeps_preview_at_80_columns():
    from kernelscope.bundle.io import read_bundle
    from kernelscope.ui.app import KernelscopeApp

    bundle = read_bundle(GPU_FIXTURES / "softmax")
    bundle.environment["preview"] = {"arch": "sm_90"}
    bundle.options["dynamic"] = True
    bundle.options["fullgraph"] = True
    app = KernelscopeApp(bundle=bundle)

    async def run():
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            header = str(app.screen.query_one("#summary").render())
            assert "PREVIEW sm_90" in header and "1 kernel" in header, header

    asyncio.run(run())


CPU_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cpu"
TWO_CALLS = CPU_FIXTURES / "add_relu_two_calls"  # capture add_relu --device cpu --args "f32[64], f32[64]; f32[128], f32[128]"


def test_presentation_of_a_two_call_capture_names_both_input_sets_and_says_the_counts_add_them():
    from kernelscope.ui.widgets.presentation import PresentationScreen

    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PresentationScreen)
        heading = str(app.screen.query_one("#pres-heading").render())
        assert "2 calls: (f32[64], f32[64]); (f32[128], f32[128])" in heading, heading
        counts = str(app.screen.query_one("#pres-counts").render())
        assert "compiled 2 kernels" in counts and "(all 2 calls)" in counts, counts

    drive(TWO_CALLS, steps, size=(160, 48))


def test_slash_in_the_kernels_table_finds_a_kernel_by_name_and_says_when_none_matches():
    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def steps(pilot, app):
        screen = app.screen
        await pilot.press("slash", *"norm_view", "enter")
        await pilot.pause()
        assert screen.kernel.name == "triton_per_fused_add_addmm_native_layer_norm_view_6", screen.kernel.name
        await pilot.press("n")
        await pilot.pause()
        assert screen.kernel.name == "triton_per_fused_add_addmm_native_layer_norm_view_7", screen.kernel.name
        assert isinstance(app.focused, KernelTable)
        await pilot.press("slash", *"zzqx", "enter")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("no match for 'zzqx'" in m for m in said), said

    drive(GPU_FIXTURES / "gpt2", steps)


def test_home_and_end_in_the_kernels_table_and_g_in_a_code_pane():
    from kernelscope.ui.widgets.code_view import CodeView
    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def steps(pilot, app):
        table = app.screen.query_one(KernelTable)
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0
        await pilot.press("5", "G")
        await pilot.pause()
        output = app.screen.query_one("#output", CodeView)
        assert output.cursor > 10
        await pilot.press("g")
        await pilot.pause()
        assert output.cursor == 0

    drive(GPU_FIXTURES / "gpt2", steps)


def test_slash_with_no_match_in_a_code_pane_says_so():
    async def steps(pilot, app):
        await pilot.press("5", "slash", *"qqzzy", "enter")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("no match for 'qqzzy'" in m for m in said), said

    drive(GPU_FIXTURES / "add_relu", steps)


def test_p_in_the_gallery_turns_presentation_mode_on_and_off():
    async def run():
        app = make_app()
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            await pilot.press("P")
            await pilot.pause()
            assert app.presentation
            await pilot.press("P")
            await pilot.pause()
            assert not app.presentation
            said = [n.message for n in app._notifications]
            assert said[-1] == "presentation mode off", said

    asyncio.run(run())


def test_p_on_a_cpu_capture_hints_at_a_preview():
    async def steps(pilot, app):
        await pilot.press("p")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("preview sm_90" in m and "C++" in m for m in said), said

    drive(TWO_CALLS, steps)


def test_v_in_the_bench_view_does_not_offer_cuda_without_a_gpu(monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")

    async def steps(pilot, app):
        await pilot.press("b")
        await pilot.pause()
        view = app.screen.query_one("BenchView")
        assert view.device == "cpu"
        await pilot.press("v")
        await pilot.pause()
        assert view.device == "cpu"
        assert "no CUDA GPU on this machine" in str(app.screen.query_one("#bench-status").render())

    drive(TWO_CALLS, steps)


def test_a_library_call_lists_its_own_aten_op_not_the_chain_before_it(ref_bundles):
    # mlp_train's backward: the mm after gelu_backward; Inductor's comment above it names the gelu ops too.
    proc = kernelscope_cmd("show", str(ref_bundles["mlp_train"]))
    lines = proc.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith("extern_kernels.mm ")]
    assert len(starts) == 5, proc.stdout
    for i in starts:
        aten = next(line for line in lines[i + 1:i + 4] if line.strip().startswith("aten:"))
        assert aten.strip() == "aten: aten.mm", lines[i:i + 4]


def test_show_and_the_report_count_guards_by_kind_and_show_guards_lists_them():
    gpt2 = str(GPU_FIXTURES / "gpt2")
    summary = kernelscope_cmd("show", gpt2).stdout
    assert "guards of 0/0 (0-0-inference): 1280 (`kernelscope show --guards` lists each)" in summary
    assert "  tensor match 149: TENSOR_MATCH 149; e.g. check_tensor(L['ids']" in summary
    assert summary.count("TENSOR_MATCH") == 1  # one count line, not 149 guards
    full = kernelscope_cmd("show", gpt2, "--guards").stdout
    assert full.count("    TENSOR_MATCH: ") == 149
    report = kernelscope_cmd("report", gpt2, "--format", "md").stdout
    assert "module attributes 1125:" in report and report.count("TENSOR_MATCH: check_tensor") == 0


def test_the_markdown_report_lists_every_call_and_a_symbolic_kernels_bytes():
    md = kernelscope_cmd("report", str(TWO_CALLS), "--format", "md").stdout
    assert "2 calls with inputs `f32[64]`, `f32[64]`; `f32[128]`, `f32[128]`" in md, md
    row = next(line for line in md.splitlines() if line.startswith("| 2 |"))
    assert "1.0 KB per call" in row and "512 B per call" in row and "?" not in row, row


async def _pipeline(pilot, app):
    from kernelscope.ui.screens.tools import PipelineScreen
    from kernelscope.ui.widgets.pipeline_view import PipelineView

    await pilot.press("p")
    await pilot.pause()
    assert isinstance(app.screen, PipelineScreen)
    view = app.screen.query_one(PipelineView)
    await _wait(pilot, lambda: bool(view.stages), 20)
    await pilot.pause()
    return view


def test_pipeline_keys_after_split_tab_split_and_braces_keep_the_cursor_and_l_pans():
    async def steps(pilot, app):
        view = await _pipeline(pilot, app)
        await pilot.press("]")  # TTIR
        await pilot.press(*"jjjjj")
        assert view.left.cursor_line == 6
        await pilot.press("s", "}")
        await pilot.pause()
        assert view.left.cursor_line == 6, "{ } moved the cursor of the other pane's partner"
        await pilot.press("tab", "s")
        await pilot.pause()
        before = view.current.stage
        await pilot.press("]")
        await pilot.pause()
        assert view.current.stage != before, "] was dead after s, tab, s"
        await pilot.press("l")
        await pilot.pause()
        assert view.left.scroll_offset.x > 0, "l did not pan"
        await pilot.press("h")
        await pilot.pause()
        assert view.left.scroll_offset.x == 0

    drive(GPU_FIXTURES / "add_relu", steps)


def test_r_over_the_passes_says_it_recomputes_and_the_pass_keys_are_in_the_footer():
    async def steps(pilot, app):
        view = await _pipeline(pilot, app)
        over_stages = [b.binding.action for b in app.screen.active_bindings.values()]
        assert "recompute" not in over_stages and "toggle_changed" not in over_stages, over_stages
        await pilot.press("p")
        await pilot.pause()
        assert view.mode == "passes"
        shown = [b.binding.action for b in app.screen.active_bindings.values() if b.binding.show]
        assert "recompute" in shown and "toggle_changed" in shown, shown
        await _wait(pilot, lambda: view._passes_state in ("ready", "failed"), 60)
        await pilot.press("r")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("recomputing the passes" in m for m in said), said

    drive(GPU_FIXTURES / "add_relu_passes", steps)


def test_a_key_typed_right_after_a_pane_key_goes_to_the_pane_shown():
    from textual import events

    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def steps(pilot, app):
        table = app.screen.query_one(KernelTable)
        first = table.cursor_row
        await pilot.press("7")
        # "1" and "↓" in one burst, as a fast typist's terminal delivers them: the ↓ is queued before
        # anything "1" schedules.
        app.post_message(events.Key("1", "1"))
        app.post_message(events.Key("down", None))
        await pilot.pause(0.5)
        assert isinstance(app.focused, KernelTable)
        assert table.cursor_row == first + 1, "the ↓ went to the Info pane"

    drive(GPU_FIXTURES / "gpt2", steps)


@pytest.mark.parametrize("pane", ["1", "2", "3", "4", "5", "7"])
def test_the_footer_at_80x24_shows_the_focused_panes_keys_then_help_then_the_tools(pane):
    async def steps(pilot, app):
        await pilot.press(pane)
        await pilot.pause(0.3)
        shown = _footer_keys_shown(app)
        own = ["⏎", "y", "/"] if pane == "1" else ["⏎", "/", "m", "y"]
        assert shown[:len(own) + 4] == [*own, "?", "esc", "p", "b"], shown  # esc: how to leave, at 80 columns
        # Recorded on the H200 from a file this machine lacks: nothing to recompile, edit or diff against,
        # so none of those keys is offered (the footer and ? agree with what works).
        assert not {"c", "e", "d"} & set(shown), shown

    drive(GPU_FIXTURES / "gpt2", steps)


def test_recent_captures_tell_captures_apart_and_list_cli_captures_made_with_o(tmp_path):
    import json
    import os
    import shutil
    import time

    from kernelscope.ui.paths import capture_summary, recent_captures, remember_capture

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(TWO_CALLS, a)
    shutil.copytree(TWO_CALLS, b)
    data = json.loads((b / "bundle.json").read_text())
    data["target"]["calls"] = [["f32[32]", "f32[32]"]]
    (b / "bundle.json").write_text(json.dumps(data))
    (b / data["source"]["path"]).write_text("def add_relu(a, b):\n    return (a * b).relu()\n")
    os.utime(a / "bundle.json", (time.time() - 5, time.time() - 5))
    remember_capture(a)
    remember_capture(b)
    found = recent_captures()
    assert found == [b, a]
    rows = [capture_summary(p) for p in found]
    assert rows[0] != rows[1]
    assert "f32[32], f32[32]" in rows[0] and "f32[64], f32[64]; f32[128], f32[128]" in rows[1], rows
    assert rows[0].split("source hash ")[1][:4] != rows[1].split("source hash ")[1][:4], rows
    assert f" · {b} · " in rows[0] and f" · {a} · " in rows[1], rows  # the folder it is in

    async def run():
        app = make_app()
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            recent = app.screen.query_one("#recent", OptionList)
            width = recent.scrollable_content_region.width
            shown = option_texts(recent)
            # Each capture in lines broken between its facts (the list wrapped one inside a shape)
            lines = [line for o in shown for line in o.split("\n")]
            assert all(len(line) <= width and line.count("[") == line.count("]") for line in lines), shown
            assert all(any(line.endswith(f"/{f.name}") or f"/{f.name} · " in line for line in o.split("\n"))
                       for o, f in zip(shown, (b, a))), shown  # the folder, its last whole folders at least
            assert "f32[32], f32[32]" in shown[0] and "source hash" in shown[0], shown

    asyncio.run(run())


def test_the_recent_list_names_a_preview_as_such(tmp_path):
    import json
    import shutil

    from kernelscope.ui.paths import capture_summary

    shutil.copytree(TWO_CALLS, tmp_path / "p")
    data = json.loads((tmp_path / "p" / "bundle.json").read_text())
    data["options"]["device"] = "cuda"
    data["environment"]["preview"] = {"arch": "sm_90", "device_name": "H100"}
    (tmp_path / "p" / "bundle.json").write_text(json.dumps(data))
    row = capture_summary(tmp_path / "p")
    assert " · PREVIEW sm_90 · default · " in row and "cuda" not in row, row


def test_the_cli_capture_ticks_while_it_compiles():
    import io
    import time

    from kernelscope.commands.ticker import Ticker

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    ticker = Ticker(out, every=0.05)
    ticker.event("  compile   torch.compile(mode=default) first call", "compile")
    time.sleep(0.3)
    ticker.event("  collect   collecting artifacts", "collect")
    text = out.getvalue()
    assert "compile running: 0 s" in text and text.endswith("\r\x1b[K  collect   collecting artifacts\n"), text

    log = io.StringIO()  # to a file: a line now and then, no carriage returns
    ticker = Ticker(log, every=0.05)
    ticker.event("  compile   first call", "compile")
    time.sleep(0.2)
    ticker.stop()
    assert "  …         compile still running: 0 s\n" in log.getvalue() and "\r" not in log.getvalue()


def test_the_line_column_names_the_file_in_a_module_over_two_files():
    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def steps(pilot, app):
        table = app.screen.query_one(KernelTable)
        cells = [str(c) for c in table.get_column("line")]
        assert cells and all(c == "-" or ".py:" in c for c in cells), cells
        assert any(c.startswith("blocks.py:") for c in cells), cells

    drive(GPU_FIXTURES / "tiny_gpt", steps)


def test_the_info_pane_shows_what_the_users_function_printed():
    from kernelscope.ui.widgets.code_view import CodeView

    async def steps(pilot, app):
        await pilot.press("7")
        await pilot.pause()
        text = app.screen.query_one("#info", CodeView).text
        assert "── your function printed (logs/stdout.txt) ──\nshape torch.Size([1024])" in text, text

    drive(GPU_FIXTURES / "graph_break", steps)


def test_the_editor_and_diff_titles_keep_what_tells_them_apart_at_80_columns(tmp_path):
    import shutil

    from kernelscope.bundle.io import read_bundle
    from kernelscope.ui.screens.editor import EditorScreen
    from kernelscope.ui.screens.tools import DiffScreen

    async def steps(pilot, app):
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen)
        title = app.screen.query_one("#summary").render()
        assert str(title).startswith("Editing add_relu · a scratch copy of add_relu.py"), title
        await pilot.press("escape")
        await pilot.pause()
        before = tmp_path / "static-two-calls"
        shutil.copytree(TWO_CALLS, before)
        app.push_screen(DiffScreen(read_bundle(before), read_bundle(TWO_CALLS)))
        await pilot.pause()
        shown = str(app.screen.query_one("#summary").render())[:80]
        assert shown.startswith("Diff: A static-two-calls → B add_relu_two_calls"), shown

    drive(GPU_FIXTURES / "add_relu", steps)


def test_diff_of_static_and_dynamic_two_call_captures_matches_the_symbolic_kernels():
    out = kernelscope_cmd("diff", str(TWO_CALLS), str(CPU_FIXTURES / "add_relu_two_calls_dynamic")).stdout
    assert "kernels: 0 replaced, 0 changed, 0 added, 1 removed, 1 same" in out, out
    assert "recompiles                  1           0  *" in out, out

    async def steps(pilot, app):
        from kernelscope.bundle.io import read_bundle
        from kernelscope.ui.screens.tools import DiffScreen

        await app.push_screen(DiffScreen(read_bundle(TWO_CALLS), read_bundle(CPU_FIXTURES / "add_relu_two_calls_dynamic")))
        await pilot.pause(0.5)
        await _wait(pilot, lambda: "kernels 2 -> 1" in str(app.screen.query_one("#diff-summary").render()), 10)
        summary = str(app.screen.query_one("#diff-summary").render())
        assert "recompiles 1 -> 0" in summary and "1 same" in summary, summary

    drive(TWO_CALLS, steps)


def screen_rows(app) -> list[str]:
    """What the terminal shows, row by row (from a screenshot: its <text> runs by line, in order)."""
    import html
    import re

    rows: dict[int, list[tuple[float, str]]] = {}
    for x, line, text in re.findall(r'<text[^>]*x="([\d.]+)"[^>]*clip-path="url\(#terminal-(?:\d+-)?line-(\d+)\)">([^<]*)</text>',
                                    app.export_screenshot()):
        rows.setdefault(int(line), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    out = []
    for n in sorted(rows):
        line, end = "", 0.0
        for x, text in rows[n]:
            line += " " * max(round((x - end) / 12.2), 0) + text
            end = x + 12.2 * len(text)
        out.append(line)
    return out


LAYER_NORM_0 = "triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0"


def test_kernel_names_keep_their_distinguishing_end_at_160x48():
    """gpt2's kernels at 160x48: the name column, the Kernel source, Output code and FX titles keep the
    fused ops' tail and the index (``…_unsqueeze_0``, not ``triton_…_unsqueeze_0`` or ``…native_layer…``)
    and the kernel's warps and stages."""
    from kernelscope.ui.widgets.kernel_table import KernelTable

    async def steps(pilot, app):
        await pilot.pause(0.5)
        assert LAYER_NORM_0 in app.screen.query_one(KernelTable).row_names()  # the name shortened below
        rows = screen_rows(app)
        shown = "\n".join(rows)
        assert "add_…_unsqueeze_0" in shown, shown
        assert "triton_…" not in shown and "triton_per_…" not in shown, shown
        kernel_title = next(r for r in rows if "warps" in r)
        assert "unsqueeze_0 · warps 8 · stages 1" in kernel_title, kernel_title
        assert any("0-0-inference · add_…" in r and "_layer_norm_unsqueeze_0 ─╯" in r for r in rows), shown
        assert any("13 nodes of add_…" in r and "_unsqueeze_0 ─╯" in r for r in rows), shown
        for row in rows:  # a name in a title is never cut at its end
            assert "native_layer… " not in row and "embedd… " not in row, row

    drive(GPU_FIXTURES / "gpt2", steps, size=(160, 48))


@pytest.mark.parametrize("where", ["explorer", "pipeline"])
def test_the_keys_panel_scrolls_to_its_last_line_at_80x24(where):
    """``?`` at 80x24 lists more keys than 24 rows hold: ↓ and End reach the last one, escape closes it."""
    from kernelscope.ui.screens.keys import KeysScreen

    async def steps(pilot, app):
        if where == "pipeline":
            await _pipeline(pilot, app)
        under = app.screen
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        keys = app.screen.rows
        assert len(keys) + 4 > NARROW[1], "the list fits: this test would not see a cut"
        _, last_keys, last_what = keys[-1]
        assert not any(last_what in row for row in screen_rows(app))
        await pilot.press("end")
        await pilot.pause()
        rows = screen_rows(app)
        assert any(f"{last_keys} {last_what}" in row for row in rows), rows
        first_group = keys[0][0]
        await pilot.press("home")
        await pilot.pause()
        assert any(first_group in row for row in screen_rows(app))
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is under

    drive(GPU_FIXTURES / "add_relu", steps)


def _footer_keys_shown(app) -> list[str]:
    footer = app.screen.query_one("KeyFooter")
    assert footer.region.width <= NARROW[0]
    return [k.key_display for k in footer.items if not k.palette]


def test_the_passes_footer_keeps_question_mark_at_80_columns_and_drops_the_stage_keys():
    async def steps(pilot, app):
        view = await _pipeline(pilot, app)
        assert "?" in _footer_keys_shown(app)
        await pilot.press("p")
        await _wait(pilot, lambda: view._passes_state in ("ready", "failed"), 60)
        await pilot.pause(0.3)
        shown = _footer_keys_shown(app)
        assert "?" in shown, shown
        assert "s" not in shown and "[]" not in shown and "d" not in shown, shown  # they did nothing here
        before = (view.split, view.diff)
        await pilot.press("s", "d")
        assert (view.split, view.diff) == before
        await pilot.press("p")
        await pilot.pause(0.3)
        assert "s" in _footer_keys_shown(app)

    drive(GPU_FIXTURES / "add_relu_passes", steps)


def test_sass_split_beside_the_source_at_80_columns_shows_the_instructions():
    """SASS | Triton source at 80x24: each SASS row shows its opcode, not only nvdisasm's padded address."""
    async def steps(pilot, app):
        view = await _pipeline(pilot, app)
        await pilot.press("[", "s")  # SASS on the left, the source beside it
        await pilot.pause(0.3)
        assert view.split and view.current.stage == "sass"
        rows = screen_rows(app)
        sass = [r.split("│")[2] for r in rows if r.startswith("│") and "/*0" in r]
        assert sass, rows
        assert any("LDC R1" in r for r in sass) and any("S2R R0, SR_TID.X" in r for r in sass), sass

    drive(GPU_FIXTURES / "add_relu", steps)


def test_the_diff_table_at_80_columns_keeps_the_kind_and_time_columns_and_the_names_ends(ref_bundles):
    from kernelscope.ui.widgets.diff_view import DiffApp

    async def run():
        app = DiffApp(str(ref_bundles["linear_relu"]), str(ref_bundles["linear_relu_autotune"]))
        async with app.run_test(size=NARROW) as pilot:
            await _wait(pilot, lambda: app.query_one("#diff-kernels").row_count > 0, 30)
            await pilot.pause(0.3)
            rows = screen_rows(app)
            header = next(r for r in rows if "A" in r and "B" in r and "kind" in r)
            assert "time A -> B" in header, rows
            assert any("backward_0" in r and "≈ replaced" in r and "ext, poi -> tpl" in r for r in rows), rows

    asyncio.run(run())


def test_question_mark_in_the_diff_app_lists_its_keys(ref_bundles):
    from kernelscope.ui.screens.keys import KeysScreen
    from kernelscope.ui.widgets.diff_view import DiffApp

    async def run():
        app = DiffApp(str(ref_bundles["linear_relu"]), str(ref_bundles["linear_relu_autotune"]))
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            assert "?" in _footer_keys_shown(app)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, KeysScreen)
            assert any(what == "Hide/show same" for _, _, what in app.screen.rows)
            assert any("↑↓ scroll · esc closes" in r for r in screen_rows(app))
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, KeysScreen)

    asyncio.run(run())


def test_the_passes_status_line_starts_with_the_pass_and_its_state_at_80_columns():
    async def steps(pilot, app):
        view = await _pipeline(pilot, app)
        await pilot.press("p")
        await _wait(pilot, lambda: view._passes_state in ("ready", "failed"), 60)
        await pilot.press("c")  # changed passes only
        longest = max(range(len(view.visible_passes)), key=lambda i: len(view.visible_passes[i].name))
        await pilot.press(*["down"] * longest)
        await pilot.pause(0.3)
        p = view.visible_passes[longest]
        status = next(r for r in screen_rows(app) if f"pass {p.index} " in r)
        assert f"pass {p.index} {p.name}: changed" in status, status
        # whole or shortened by whole facts: where the dump came from is dropped, never cut ("recomputed for")
        shown = str(app.screen.query_one("#pv-status").render())
        assert len(shown) <= 78 and shown in view.status_text and not shown.endswith(("for", ",")), shown

    drive(GPU_FIXTURES / "add_relu_passes", steps)


def test_stage_keys_typed_while_the_stages_load_are_kept():
    from kernelscope.ui.screens.tools import PipelineScreen
    from kernelscope.ui.widgets.pipeline_view import PipelineView

    async def steps(pilot, app):
        await pilot.press("p")
        await _wait(pilot, lambda: isinstance(app.screen, PipelineScreen), 10)
        view = app.screen.query_one(PipelineView)
        typed_early = not view.stages
        await pilot.press("]", "]")
        await _wait(pilot, lambda: bool(view.stages), 20)
        await pilot.pause()
        assert typed_early, "the stages loaded before the keys: this test saw nothing"
        assert view.current.stage == "ttgir", view.current.stage  # source -> TTIR -> TTGIR

    drive(GPU_FIXTURES / "add_relu", steps)


def test_the_palettes_keys_command_opens_the_panel_that_scrolls():
    from kernelscope.ui.screens.keys import KeysScreen

    async def steps(pilot, app):
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Keys")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.5)
        assert isinstance(app.screen, KeysScreen), app.screen
        assert not app.screen.query("HelpPanel") and not app.screen_stack[-2].query("HelpPanel")

    drive(GPU_FIXTURES / "add_relu", steps)


def test_the_bench_views_measured_table_shows_every_column_at_80_columns():
    async def steps(pilot, app):
        runs = app.screen.bundle.extra["bench"]["run"]["eager"]["e2e"]["runs"]
        await pilot.press("b")
        await pilot.pause(0.5)
        for _ in range(40):  # down to the measured table
            rows = screen_rows(app)
            if any("end-to-end" in r and "p10-p90" in r for r in rows[:-6]):
                break
            await pilot.press("down")
            await pilot.pause()
        header = next(r for r in rows if "end-to-end" in r and "p10-p90" in r)
        assert header.rstrip().endswith("runs"), header
        eager = next(r for r in rows if r.split()[:2] == ["eager", "1"] and " ms" in r)
        assert eager.split()[-1] == str(runs), eager

    drive(GPU_FIXTURES / "softmax_bench_cpu", steps)


def test_the_breaks_pane_footer_shows_enter_and_enter_shows_the_line():
    async def steps(pilot, app):
        await pilot.press("6")
        await pilot.pause(0.3)
        shown = _footer_keys_shown(app)
        assert shown[:2] == ["⏎", "?"], shown
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.screen.active_pane == "source"

    drive(GPU_FIXTURES / "graph_break", steps)


def test_the_editor_says_the_users_file_is_untouched_at_80_columns(tmp_path, monkeypatch):
    from kernelscope.ui.screens.editor import EditorScreen

    async def run():
        app = make_app()
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            await pilot.press("e")
            await _wait(pilot, lambda: isinstance(app.screen, EditorScreen), 10)
            await pilot.pause(0.3)
            # the gallery's first sample ships with kernelscope: it is never written (ctrl+s saves as)
            assert any("the sample is never written: ctrl+s saves your edits as a file" in r
                       for r in screen_rows(app)), screen_rows(app)

    asyncio.run(run())


def test_the_bench_views_sentences_wrap_so_their_numbers_show_at_80_columns():
    from textual.widgets import Static

    async def steps(pilot, app):
        compile_s = app.screen.bundle.extra["bench"]["run"]["compile_s"]
        await pilot.press("b")
        await pilot.pause(0.5)
        lines = str(app.screen.query_one("#bench-text", Static).render()).splitlines()
        shown = app.screen.query_one("#bench-scroll").size.width - 2  # the text's padding
        assert any(f"{compile_s} s)" in line and len(line) <= shown for line in lines), lines
        cpu = next(i for i, line in enumerate(lines) if line.startswith("CPU: "))
        # the header's facts wrap whole: no "python" at one line's end and its version on the next
        header = lines[cpu:cpu + 2]
        assert all(len(line) <= shown for line in header), header
        assert any("python 3.11.7" in line for line in header), header
        assert any(line.strip().startswith("(20") or "  (20" in line for line in header), header
        table = next(line for line in lines if line.split()[:2] == ["eager", "1"] and " ms" in line)
        assert "  " in table.strip()  # the table rows keep their columns

    drive(GPU_FIXTURES / "softmax_bench_cpu", steps)


def test_benching_a_received_bundle_asks_before_running_its_copy_of_the_file():
    from kernelscope.ui.screens.dialogs import ConfirmScreen
    from kernelscope.ui.screens.tools import BenchScreen

    async def steps(pilot, app):
        await pilot.press("b")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen), app.screen
        assert "hf_gpt2.py" in app.screen.question and "--run-bundled-source" not in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, BenchScreen)
        status = str(app.screen.query_one("#bench-status").render())
        assert "not run: the bundle's copy of the captured file was not agreed to" in status, status

    drive(GPU_FIXTURES / "gpt2", steps)


def test_the_bench_view_of_a_gpu_capture_on_a_machine_without_one_benches_on_the_cpu(monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")

    async def steps(pilot, app):
        await pilot.press("b")
        await pilot.pause()
        view = app.screen.query_one("BenchView")
        assert view.device == "cpu" and view.settings.device == "cpu"
        status = str(app.screen.query_one("#bench-status").render())
        assert "r: eager vs compiled on cpu" in status, status

    drive(GPU_FIXTURES / "softmax", steps)


def test_presentation_titles_keep_the_kernel_names_end_at_80x24():
    from kernelscope.ui.widgets.presentation import PresentationScreen

    async def steps(pilot, app):
        await pilot.press("P")
        await _wait(pilot, lambda: isinstance(app.screen, PresentationScreen), 10)
        await pilot.pause(0.3)
        title = str(app.screen.query_one("#pres-right").border_title)
        assert title.endswith("_unsqueeze_0") and "…" in title, title
        assert any(title in r for r in screen_rows(app)), title  # the whole title is drawn

    drive(GPU_FIXTURES / "gpt2", steps)


def test_tab_then_enter_in_the_gallery_opens_the_newest_recent_capture(tmp_path):
    import shutil

    from kernelscope.ui.paths import remember_capture

    bundle = tmp_path / "a"
    shutil.copytree(TWO_CALLS, bundle)
    remember_capture(bundle)

    async def run():
        app = make_app()
        async with app.run_test(size=NARROW) as pilot:
            await pilot.pause()
            await pilot.press("tab")
            await pilot.pause()
            assert app.focused.id == "recent"
            await pilot.press("enter")
            await _wait(pilot, lambda: isinstance(app.screen, ExplorerScreen), 10)
            assert str(app.screen.bundle.root) == str(bundle)

    asyncio.run(run())


def test_footer_keys_end_whole_at_80_columns_and_come_back_when_wider():
    """At 80x24 a key that would run past the edge ("t Th", "u Use") is hidden with those after it,
    ? stays in view (it lists them all); at 160x48 they are back, and none runs under ^p palette."""
    def shown(app):
        footer = app.screen.query_one("KeyFooter")
        width = footer.region.width
        palette = [k for k in footer.items if k.palette]
        room = palette[0].start - 1 if palette else width  # left of the palette's border
        keys = [k for k in footer.items if not k.palette]
        assert all(k.end <= room for k in keys), [(k.key, k.start, k.end, room) for k in keys]
        assert all(k.end <= width for k in palette)
        assert footer.render().cell_len <= width
        total = {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}
        return {k.key for k in keys}, len(total)

    async def steps(pilot, app):
        for _ in range(3):
            await pilot.pause()
        narrow, total = shown(app)
        assert "question_mark" in narrow and len(narrow) < total
        await pilot.resize_terminal(160, 48)
        for _ in range(4):
            await pilot.pause()
        wide, _ = shown(app)
        assert narrow < wide

    drive(GPU_FIXTURES / "gpt2", steps)


def test_the_gallery_shows_the_highlighted_samples_description_whole_at_80_columns():
    """The list cuts each description to its width ("add + relu: two ea…"); the highlighted one is
    shown whole, wrapped, under it, and follows the cursor."""
    from textual.widgets import Static

    from kernelscope.target import list_samples

    samples = list_samples()

    async def run():
        app = make_app(None)
        async with app.run_test(size=NARROW) as pilot:
            for _ in range(3):
                await pilot.pause()
            about = app.screen.query_one("#sample-about", Static)
            assert str(about.render()) == samples[0].description
            assert about.region.height >= 2 and about.region.right <= 40  # wrapped inside the left column
            await pilot.press("down")
            await pilot.pause()
            assert str(about.render()) == samples[1].description

    asyncio.run(run())
