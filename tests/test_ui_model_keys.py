"""Moving through the kernels of a 12-layer GPT-2 (tests/fixtures/gpu/gpt2) marks every pane for the
kernel reached, as drawn on screen: each move repaints only what changed (lines whose mark moved, the
border line holding a pane's subtitle, the two rows of the kernel list whose ▶ moved), so a line left
unrepainted would show the previous kernel here."""

from __future__ import annotations

import asyncio

import pytest
from textual.geometry import Region

from kernelscope.ui.app import make_app
from kernelscope.ui.screens import list_runs
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.widgets.code_view import MARK_GLYPH, CodeView
from kernelscope.ui.widgets.kernel_table import KernelTable, display_name

from .conftest import GPU_FIXTURES

GPT2 = GPU_FIXTURES / "gpt2"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def drawn(widget) -> list[str]:
    """The widget's lines as the screen shows them (its render cache: lines not repainted stay as they were)."""
    width, height = widget.outer_size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def check_shows(screen: ExplorerScreen, kernel) -> None:
    index, graph = screen.index, screen.graph
    assert screen.kernel is kernel

    views = {name: screen.query_one(f"#{name}", CodeView) for name in ("source", "fx", "output")}
    wanted = {
        "source": set(index.source_rows_for_kernel(kernel)),
        "fx": {n - 1 for n in index.fx_lines_for_kernel(kernel, graph, screen.fx_kind)},
        "output": {n - 1 for n in index.output_lines_for_kernel(kernel)},
    }
    for name, view in views.items():
        assert view.marks == wanted[name], name
        top, lines = int(view.scroll_offset.y), drawn(view)
        shown = [i for i in range(top, min(top + view.scrollable_content_region.height, len(view.doc)))]
        for i in shown:  # a marked line carries the glyph, every other line not
            assert lines[i - top].startswith(MARK_GLYPH) == (i in view.marks), (name, i, lines[i - top])
    assert wanted["fx"] and wanted["source"] and wanted["output"], wanted
    # The FX graph and your source jump to the kernel's first marked line: it is on screen.
    for name in ("fx", "source"):
        view = views[name]
        top = int(view.scroll_offset.y)
        assert top <= min(view.marks) < top + view.scrollable_content_region.height, name

    table = screen.query_one(KernelTable)
    assert table.current()[1] is kernel
    rows = drawn(table)  # under its header
    selected = [y for y, line in enumerate(rows) if line.lstrip().startswith("▶")]
    assert selected == [table.cursor_row + 1 - int(table.scroll_offset.y)], (selected, rows)
    assert display_name(kernel)[-6:] in rows[selected[0]]  # long names shorten in the middle

    kernel_pane = screen.query_one("#pane-kernel")
    # Its bottom border: "name · warps ...", the name keeping its end (the last op and the index).
    assert "_".join(kernel.name.split("_")[-2:]) in drawn(kernel_pane)[-1], drawn(kernel_pane)[-1]
    fx_count = len(wanted["fx"])
    fx_border = drawn(screen.query_one("#pane-fx"))[-1]
    assert f"{fx_count} node" in fx_border, fx_border

    info = drawn(screen.query_one("#info", CodeView))
    # the whole name is in the pane, its end too (a long one goes on over lines under the value)
    shown = "".join(line.split("│")[1].strip() if "│" in line else line.strip() for line in info)
    assert kernel.name in shown.replace("kernel      ", ""), info[:4]


@pytest.mark.parametrize("pace", ["paused", "run"])
def test_moving_down_and_up_the_gpt2_kernels_marks_the_kernel_reached_in_every_pane(pace, monkeypatch):
    """``paused``: each move comes after a pause (a run of moves waits no time here) and is shown in every
    pane in the same frame; ``run``: the keys are one run (ui/screens/list_runs.py): the list follows each,
    every pane shows where the run stopped once it stops."""
    monkeypatch.setattr(list_runs, "FOLLOW_QUIET", 0.0 if pace == "paused" else 30.0)

    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            while not isinstance(app.screen, ExplorerScreen):
                await pilot.pause(0)
            await pilot.pause()
            screen = app.screen
            order = screen.index.kernels_in_order()
            assert len(order) == 70
            check_shows(screen, order[0])
            at = 0
            # Down past the first screenful of the list (it scrolls too), then back up; checked after
            # every key, as the screen is at once (the selection follows the list's cursor in the same
            # frame), and once more after a pause.
            for key in ["down"] * 24 + ["up"] * 6:
                await pilot.press(key)
                at += 1 if key == "down" else -1
                if pace == "paused":
                    check_shows(screen, order[at])
                else:
                    assert screen.kernel is order[at] and screen.query_one(KernelTable).current()[1] is order[at]
            if pace == "run":
                screen.follow_now()  # what the run's end does, FOLLOW_QUIET after its last move
            await pilot.pause()
            check_shows(screen, order[at])

    asyncio.run(run())
