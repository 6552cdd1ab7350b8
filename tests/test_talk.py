"""Presentation mode (P, --big) and `kernelscope talk`: driven by keys as a speaker would."""

from __future__ import annotations

import asyncio
import json

import pytest

from kernelscope.ui.app import KernelscopeApp, make_app
from kernelscope.ui.screens.dialogs import ConfirmScreen
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.screens.gallery import GalleryScreen
from kernelscope.ui.talk import DEFAULT_TALK, TalkError, load_talk
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.presentation import PresentationScreen

from .conftest import GPU_FIXTURES, kernelscope_cmd


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELSCOPE_SERVE", raising=False)


def run_app(app, steps, size=(120, 36)):
    async def run():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def svg_text(svg: str) -> str:
    """What a screenshot shows, as text: its <text> runs in order (a line's runs are contiguous)."""
    import html
    import re

    return "".join(html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))).split())


def text_of(screen, selector) -> str:
    return str(screen.query_one(selector).render())


def test_presentation_shows_the_source_the_fused_kernel_and_the_counts():
    async def steps(pilot, app):
        await pilot.press("P")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PresentationScreen)
        counts = text_of(screen, "#pres-counts")
        assert "eager 2 kernels / 5 transfers" in counts and "compiled 1 kernel / 3 transfers" in counts
        assert "not benched" in counts
        source = screen.query_one("#pres-source", CodeView)
        assert "return (a + b).relu()" in source.text
        assert source.text.splitlines()[source.marks and min(source.marks)].strip() == "return (a + b).relu()"
        assert "tl.load" in screen.query_one("#pres-kernel", CodeView).text
        assert "triton_poi_fused_add_relu_0" in screen.query_one("#pres-right").border_title
        shown = svg_text(app.export_screenshot())
        for words in ("eager 2 kernels / 5 transfers", "compiled 1 kernel / 3 transfers",
                      "return (a + b).relu()", "tl.load", "triton_poi_fused_add_relu_0"):
            assert "".join(words.split()) in shown
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ExplorerScreen) and app.screen.layout_mode != "big"

    run_app(make_app(str(GPU_FIXTURES / "add_relu")), steps)


def test_big_opens_a_capture_as_its_story_and_escape_shows_the_explorer():
    async def steps(pilot, app):
        assert isinstance(app.screen, PresentationScreen)
        # linear_relu's first kernel is cuBLAS's mm: the story is the fused epilogue
        assert "addmm_relu" in app.screen.query_one("#pres-right").border_title
        await pilot.press("full_stop")
        assert "extern" in app.screen.query_one("#pres-right").border_title
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ExplorerScreen)

    run_app(make_app(str(GPU_FIXTURES / "linear_relu"), presentation=True), steps)


def test_presentation_shows_the_measured_time_of_a_benched_capture():
    async def steps(pilot, app):
        counts = text_of(app.screen, "#pres-counts")
        # a GPU capture benched on the CPU: where it was measured, and that the CPU ran its own compile
        assert ("measured on CPU (Intel(R) Xeon(R) Processor), a CPU re-capture of a cuda capture: eager 28.03 ms"
                in counts) and "compiled 40.14 ms" in counts

    run_app(make_app(str(GPU_FIXTURES / "softmax_bench_cpu"), presentation=True), steps)


def test_presentation_in_the_pipeline_shows_a_stage_next_to_its_partner():
    async def steps(pilot, app):
        await pilot.press("p")
        for _ in range(100):
            await pilot.pause(0.05)
            view = app.screen.query("PipelineView")
            if view and view.first().stages:
                break
        await pilot.press("P")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PresentationScreen)
        assert screen.query_one("#pres-left").border_title.startswith("Triton source")
        assert screen.query_one("#pres-right").border_title.startswith("TTIR")
        assert "tt.func" in screen.query_one("#pres-kernel", CodeView).text
        assert "eager 2 kernels" in text_of(screen, "#pres-counts")

    run_app(make_app(str(GPU_FIXTURES / "add_relu")), steps)


def test_escape_on_the_first_screen_does_not_quit():
    async def steps(pilot, app):
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, GalleryScreen)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running

    run_app(make_app(), steps)


def test_escape_from_a_capture_lands_in_the_gallery_and_stays():
    async def steps(pilot, app):
        for _ in range(5):
            await pilot.press("escape")
            await pilot.pause(0.1)
        assert app.is_running and isinstance(app.screen, GalleryScreen)
        assert "Pick a sample" in text_of(app.screen, "#summary")
        assert app.screen.query_one("#preview", CodeView).text.startswith('"""add + relu')  # drawn, no crash

    run_app(make_app(str(GPU_FIXTURES / "add_relu"), presentation=True), steps)


def test_served_quit_asks_first(monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_SERVE", "1")

    async def steps(pilot, app):
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "End the session?" in text_of(app.screen, "Static")
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, GalleryScreen)
        await pilot.press("q", "y")
        await pilot.pause()
        assert not app.is_running

    run_app(make_app(), steps)


def test_the_shipped_talk_steps_forward_and_back_with_one_key():
    talk = load_talk(DEFAULT_TALK)
    assert len(talk.steps) >= 5

    async def steps(pilot, app):
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, PresentationScreen):
                break
        screen = app.screen
        assert isinstance(screen, PresentationScreen)
        assert f"1/{len(talk.steps)} · add + relu" in text_of(screen, "#pres-heading")
        assert "eager 2 kernels / 5 transfers" in text_of(screen, "#pres-counts")
        # the shipped captures carry their H200 bench: the talk shows measured times, offline
        assert "measured on NVIDIA H200: eager" in text_of(screen, "#pres-counts")
        seen = []
        for n in range(1, len(talk.steps)):
            await pilot.press("space" if n % 2 else "right")
            await pilot.pause()
            step = talk.steps[n]
            top = app.screen
            heading = text_of(top, "#pres-heading") if isinstance(top, PresentationScreen) else \
                text_of(top, ".talk-banner")
            assert f"{n + 1}/{len(talk.steps)} · {step.title}" in heading
            if step.pane not in ("presentation", "pipeline"):
                assert isinstance(top, ExplorerScreen) and top.active_pane == step.pane
            seen.append((step.bundle.name, step.pane, type(top).__name__))
        assert ("graph_break", "breaks", "ExplorerScreen") in seen
        assert ("softmax", "pipeline", "PipelineScreen") in seen
        await pilot.press("space")  # past the end: stays
        await pilot.pause()
        assert app.talk_index == len(talk.steps) - 1
        await pilot.press("left", "left")
        await pilot.pause()
        assert app.talk_index == len(talk.steps) - 3
        assert f"{len(talk.steps) - 2}/{len(talk.steps)}" in text_of(app.screen, "#pres-heading")

    run_app(KernelscopeApp(talk=talk), steps, size=(80, 24))


def test_a_bad_talk_script_is_one_line_naming_the_problem(tmp_path):
    script = tmp_path / "talk.json"
    script.write_text(json.dumps({"steps": [{"bundle": "nowhere", "pane": "source"}]}))
    with pytest.raises(TalkError, match="step 1: nowhere is not a bundle folder"):
        load_talk(script)
    (tmp_path / "b").symlink_to(GPU_FIXTURES / "add_relu")
    script.write_text(json.dumps({"steps": [{"bundle": "b", "pane": "slides"}]}))
    with pytest.raises(TalkError, match="unknown pane 'slides'"):
        load_talk(script)
    proc = kernelscope_cmd("talk", str(tmp_path / "missing.toml"), timeout=60)
    assert proc.returncode == 2 and "no such talk script" in proc.stderr and "Traceback" not in proc.stderr


def test_the_talks_numbers_tell_its_story_and_each_note_is_true_of_them():
    """The shipped talk's captures, benched on the GPU: the bandwidth-bound steps (the seeds' 2**24 elements)
    are faster compiled end to end; a step whose end to end the host decides shows the kernels' own time and
    says so; the counts the notes speak of are the measured ones."""
    from kernelscope.bundle.io import read_bundle
    from kernelscope.ui.story import story
    from kernelscope.ui.talk import load_talk

    talk = load_talk(DEFAULT_TALK)
    stories = {}
    for step in talk.steps:
        stories.setdefault(step.bundle.name, (step, story(read_bundle(step.bundle))))
    for name in ("add_relu", "mul_add_sigmoid", "graph_break"):
        s = stories[name][1]
        assert s.inputs and all("16777216" in x for x in s.inputs), (name, s.inputs)
        assert s.compiled_us < s.eager_us and s.compiled_device_us < s.eager_device_us, name
        assert "host-bound" not in s.time_line()
    for name in ("softmax", "linear_relu"):
        s = stories[name][1]
        assert s.compiled_us > s.eager_us  # small inputs: the host decides end to end, and the talk says why
        assert "kernels alone: eager" in s.time_line() and "host-bound at this size" in s.time_line()
    gb = stories["graph_break"][1]
    assert (gb.eager_kernels, gb.compiled_kernels) == (4, 2)
    lr = stories["linear_relu"]
    assert lr[1].eager_kernels == lr[1].compiled_kernels == 2 and "two kernels either way" in lr[0].note
