"""Pilot tests of the pipeline view as the explorer opens it (p), on add_relu's recorded H200 artifacts:
enter follows a line to its source and back, d diffs the previous stage, SASS is compact (a: raw)."""

from __future__ import annotations

import asyncio

import pytest

from kernelscope.pipeline.listing import compact_sass, short_paths
from kernelscope.ui.app import make_app
from kernelscope.ui.screens.tools import PipelineScreen
from kernelscope.ui.widgets.pipeline_view import PipelineView

from .conftest import GPU_FIXTURES

NARROW = (80, 24)
KERNEL_FILE = "triton_poi_fused_add_relu_0.py"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def pipeline(steps, size=NARROW, bundle="add_relu"):
    """Open the bundle, press p, wait for the stages, run ``await steps(pilot, view)``."""

    async def run():
        app = make_app(str(GPU_FIXTURES / bundle))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("p")
            await pilot.pause()
            assert isinstance(app.screen, PipelineScreen)
            view = app.screen.query_one(PipelineView)
            for _ in range(200):
                if view.stages:
                    break
                await pilot.pause(0.05)
            await pilot.pause()
            await steps(pilot, view)

    asyncio.run(run())


def cursor_text(pane) -> str:
    return pane.lines[pane.cursor_line - 1]


async def cursor_to(pilot, pane, needle: str) -> int:
    """Move the cursor down to the first line holding ``needle``, with keys; its 1-based line."""
    target = next(i for i, text in enumerate(pane.lines, 1) if needle in text)
    await pilot.press(*["down"] * (target - pane.cursor_line))
    assert pane.cursor_line == target
    return target


def footer(view) -> list[str]:
    """The footer's keys and group labels ("[" "]" "stage"), left to right."""
    return view.screen.query_one("KeyFooter").labels()


def test_enter_on_a_sass_line_jumps_to_its_source_line_and_enter_there_jumps_back():
    async def steps(pilot, view):
        await pilot.press("[")  # wraps to SASS
        assert view.left.border_title == "SASS"
        line = await cursor_to(pilot, view.left, "LDG.E")
        load = cursor_text(view.left)
        await pilot.press("enter")
        await pilot.pause()
        assert view.left.border_title == "Triton source"
        assert "tmp0 = tl.load(in_ptr0" in cursor_text(view.left)
        assert view.left.cursor_line in view.left.marked
        assert "⏎ back to SASS" in view.status_text
        await pilot.press("enter")
        await pilot.pause()
        assert view.left.border_title == "SASS"
        assert view.left.cursor_line == line and cursor_text(view.left) == load

    pipeline(steps)


def test_enter_side_by_side_moves_to_the_mapped_line_in_the_other_pane():
    async def steps(pilot, view):
        await pilot.press("s", "}", "}", "}")  # Triton source | PTX
        assert view.right.border_title == "PTX"
        await cursor_to(pilot, view.left, "tl.load(in_ptr0")
        await pilot.press("enter")
        await pilot.pause()
        assert view.screen.focused is view.right
        assert view.right.cursor_line == min(view.right.marked)  # the first PTX line of that source line
        assert any("ld.global" in view.right.lines[n - 1] for n in view.right.marked)
        await pilot.press("enter")  # and back, from the PTX line to its source line
        await pilot.pause()
        assert view.screen.focused is view.left and "tl.load(in_ptr0" in cursor_text(view.left)

    pipeline(steps)


def test_enter_on_a_line_without_line_info_says_so():
    async def steps(pilot, view):
        await pilot.press("[")
        await pilot.press("enter")  # line 1 of SASS: a header, no source line
        await pilot.pause()
        assert view.left.border_title == "SASS"
        messages = [n.message for n in view.app._notifications]
        assert any("SASS line 1 has no source line" in m for m in messages), messages

    pipeline(steps)


def test_diff_is_the_previous_stage_against_this_one_and_braces_pick_the_partner():
    async def steps(pilot, view):
        await pilot.press("]", "]", "d")  # on TTGIR
        assert view.left.border_title == "diff TTIR → TTGIR"
        assert view.left.lines[:2] == ["--- TTIR", "+++ TTGIR"]
        await pilot.press("]")  # the pair steps: LLVM IR against TTGIR
        assert view.left.lines[:2] == ["--- TTGIR", "+++ LLVM IR"]
        await pilot.press("{")  # the partner one stage back: still earlier first
        assert view.left.lines[:2] == ["--- TTIR", "+++ LLVM IR"]
        await pilot.press("]")  # a new stage: against the one before it again
        assert view.left.lines[:2] == ["--- LLVM IR", "+++ PTX"]
        await pilot.press("d")
        assert view.left.border_title == "PTX"
        await pilot.press("s", "d")  # from side by side: the diff takes the whole width
        await pilot.pause()
        assert view.left.border_title == "diff LLVM IR → PTX"
        assert view.query_one("#pv-right").region.width == 0 and view.left.region.width > 70
        await pilot.press("d")
        await pilot.pause()
        assert view.query_one("#pv-right").region.width > 30
        await pilot.pause()
        shown = footer(view)
        assert "{" in shown and "}" in shown and "other" in shown, shown

    pipeline(steps)


def test_sass_is_compact_and_a_shows_it_as_nvdisasm_printed_it():
    async def steps(pilot, view):
        await pilot.press("[")
        await pilot.pause()
        compact = view.left.lines
        assert not any(t.lstrip().startswith("//## File") for t in compact)
        assert not any(not a.strip() and not b.strip() for a, b in zip(compact, compact[1:], strict=False))
        assert "a raw SASS" in footer(view)
        await cursor_to(pilot, view.left, "LDG.E")
        assert "← source line 24" in view.status_text  # the folded //## File line still maps it
        await pilot.press("a")
        await pilot.pause()
        raw = view.left.lines
        files = [t.strip() for t in raw if t.lstrip().startswith("//## File")]
        assert len(files) > 10 and len(raw) > len(compact)
        assert files[0].startswith(f'//## File "{KERNEL_FILE}", line 18')
        assert not any("kernelscope-work" in t for t in raw)
        assert "LDG.E" in cursor_text(view.left)  # the same instruction under the cursor
        assert "← source line 24" in view.status_text
        assert "a compact" in footer(view) and "? Keys" in footer(view), footer(view)  # ? too, at 80 columns

    pipeline(steps)


def test_temporary_capture_paths_show_as_the_kernel_file_and_stay_on_disk():
    async def steps(pilot, view):
        for stage in view.stages:
            assert "kernelscope-work" not in stage.text, stage.title
        ttgir = next(s for s in view.stages if s.stage == "ttgir")
        assert f'loc("{KERNEL_FILE}":' in ttgir.text
        raw = next(s for s in view.raw_stages if s.stage == "ttgir")
        with open(raw.path, encoding="utf-8") as f:
            assert "/tmp/kernelscope-work/" in f.read()  # display only: the bundle's file is as captured

    pipeline(steps)


def test_listing_transforms_on_text():
    sass = ('\t.target sm_90a\n\n\n\t//## File "/tmp/kernelscope-work-ab12/inductor/nu/cx.py", line 18\n'
            "        /*0000*/  LDC R1, c[0x0][0x28] ;\n\n\n\n        /*0010*/  EXIT ;\n")
    text, origin = compact_sass(sass)
    assert text.splitlines() == ["\t.target sm_90a", "", " /*0000*/ LDC R1, c[0x0][0x28] ;", "",
                                 " /*0010*/ EXIT ;"]
    assert origin == [1, 2, 5, 6, 9]
    llir = '!1 = !DIFile(filename: "cx.py", directory: "/tmp/kernelscope-work-ab12/inductor/nu")'
    assert short_paths(llir, "/tmp/kernelscope-work/inductor/nu/cx.py", "k.py") == \
        '!1 = !DIFile(filename: "k.py", directory: "")'
    other = 'loc("/opt/torch/_inductor/runtime/triton_helpers.py":119:29)'
    assert short_paths(other, "/tmp/kernelscope-work/inductor/nu/cx.py", "k.py") == other
