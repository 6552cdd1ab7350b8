"""Views that follow a bench: after `b` then `r` in the explorer, the presentation (P) shows the new
measurement and where it was taken, without reopening the bundle (the bench view used to keep the
results in a copy of the bundle only its own screen read)."""

from __future__ import annotations

import asyncio
import shutil

from kernelscope.bundle.model import Bundle
from kernelscope.ui.story import story
from tests.conftest import seeded_cache


def test_p_after_a_bench_in_the_explorer_shows_it(cpu_add_relu, tmp_path, monkeypatch):
    from textual.widgets.data_table import ColumnKey

    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens.explorer import ExplorerScreen
    from kernelscope.ui.widgets.bench_view import BenchView
    from kernelscope.ui.widgets.kernel_table import KernelTable
    from kernelscope.ui.widgets.presentation import PresentationScreen

    bundle = tmp_path / "add_relu"
    shutil.copytree(cpu_add_relu, bundle)
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(seeded_cache(cpu_add_relu, tmp_path / "cache")))
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")

    async def counts_text(pilot) -> str:
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(pilot.app.screen, PresentationScreen)
        text = str(pilot.app.screen.query_one("#pres-counts").render())
        await pilot.press("P")
        await pilot.pause()
        return text

    async def scenario():
        app = make_app(str(bundle))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, ExplorerScreen)
            assert "not benched" in await counts_text(pilot)
            assert "device time per line" not in app.screen.query_one("#info").text
            table = app.screen.query_one(KernelTable)
            assert ColumnKey("time") not in table.columns  # no time column before a bench
            await pilot.press("b")
            await pilot.pause()
            view = app.screen.query_one(BenchView)
            view.focus()
            await pilot.press("r")
            for _ in range(1800):  # a CPU bench: its compile and timing, tens of seconds on a busy host
                await pilot.pause(0.1)
                if not view.running:
                    break
            assert not view.running
            assert "last run" in str(app.screen.query_one("#bench-status").render())
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, ExplorerScreen)
            text = await counts_text(pilot)
            assert "not benched" not in text
            assert "measured on CPU (" in text and "eager " in text and "compiled " in text
            # the Info pane draws its text again: the bench's device time per line is in it
            assert "device time per line" in app.screen.query_one("#info").text
            # the kernel list has its time column now, the kernel's time in it
            (row,) = [table.get_row_at(i) for i in range(table.row_count)]
            assert ColumnKey("time") in table.columns and str(row[1]).endswith("add_relu_0")
            assert str(row[-1]).endswith(("µs", "ms")), row

    asyncio.run(scenario())


def test_a_preview_benched_on_the_cpu_says_it_was_a_cpu_recapture():
    run = {"device": {"device": "cpu", "cpu_model": "AMD EPYC"}, "captured_on": "cpu",
           "inputs": ["f32[65536]", "f32[65536]"], "counts": {"eager": {"kernels": 2, "transfers": 5},
                                                               "compiled": {"kernels": 1, "transfers": 3}},
           "eager": {"e2e": {"median_us": 40.0}}, "compiled": {"e2e": {"median_us": 20.0}}}
    b = Bundle(target={"name": "add_relu", "inputs": ["f32[16777216]", "f32[16777216]"]},
               environment={"preview": {"arch": "sm_90"}}, extra={"bench": {"run": run}})
    line = story(b).time_line()
    assert line.startswith("measured on CPU (AMD EPYC), a CPU re-capture of a preview for sm_90 (not the "
                           "previewed kernels), at (f32[65536], f32[65536]): eager 40")
    b.environment = {}
    run["captured_on"] = "cuda"
    assert "a CPU re-capture of a cuda capture, at (f32[65536]" in story(b).time_line()


def test_a_gpu_measurement_is_named_by_its_gpu_never_by_the_host_cpu():
    from kernelscope.bundle.bench_record import measured_device

    assert measured_device({"device": "cuda", "device_name": "NVIDIA H200", "cpu_model": "AMD EPYC"}) == "NVIDIA H200"
    assert measured_device({"device": "cuda", "cpu_model": "AMD EPYC"}) == ""
    assert measured_device({"device": "cpu", "device_name": "x86_64", "cpu_model": "AMD EPYC"}) == "AMD EPYC"
    run = {"device": {"device": "cuda", "cpu_model": "AMD EPYC"}, "eager": {"e2e": {"median_us": 40.0}},
           "compiled": {"e2e": {"median_us": 20.0}}}
    line = story(Bundle(extra={"bench": {"run": run}})).time_line()
    assert line.startswith("measured on cuda: eager 40") and "EPYC" not in line, line
