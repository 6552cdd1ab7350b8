"""Moving through the kernel list: a run of moves (a key held) moves the list and its ▶ at once and the
other panes where the run stops; a move after a pause, or a pane shown meanwhile, shows in every pane.

Driven on the GPU GPT-2 capture in tests/fixtures/gpu (read on the CPU), at 160x48."""

from __future__ import annotations

import asyncio

from kernelscope.ui.app import make_app
from kernelscope.ui.screens import list_runs
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.kernel_table import KernelTable

from .conftest import GPU_FIXTURES

GPT2 = GPU_FIXTURES / "gpt2"


def drive(steps) -> None:
    async def run():
        app = make_app(str(GPT2))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await steps(pilot, app.screen)

    asyncio.run(run())


def kernel_pane(screen) -> str:
    return screen.query_one("#kernel", CodeView).doc.text


def test_a_run_of_moves_moves_the_list_at_once_and_the_kernel_pane_where_the_run_stopped(monkeypatch):
    monkeypatch.setattr(list_runs, "FOLLOW_QUIET", 30.0)  # however loaded the box, the presses are one run

    async def steps(pilot, screen):
        order = screen.index.kernels_in_order()
        assert [k.lang for k in order[:4]] == ["triton", "extern", "triton", "triton"]
        table = screen.query_one(KernelTable)
        await pilot.press("down")  # the first move: every pane at once
        assert screen.kernel is order[1]
        assert f"{order[1].name} is an extern call" in kernel_pane(screen)
        await pilot.press("down", "down")  # a run: the list's cursor and ▶ follow each move
        assert screen.kernel is order[3]
        assert table.get_row_at(table.cursor_row)[0].plain == "▶"
        assert table.get_row_at(table.cursor_row - 2)[0].plain == " "
        assert f"{order[1].name} is an extern call" in kernel_pane(screen)  # the pane waits for the run's end
        await pilot.press("4")  # the kernel pane shown: it shows where the run stopped
        await pilot.pause()
        assert f"def {order[3].name}(" in kernel_pane(screen)

    drive(steps)


def test_the_panes_show_where_a_run_of_moves_stopped_once_it_stops():
    async def steps(pilot, screen):
        order = screen.index.kernels_in_order()
        await pilot.press("down", "down", "down")
        assert screen.kernel is order[3]
        await pilot.pause(list_runs.FOLLOW_QUIET + 0.3)
        assert f"def {order[3].name}(" in kernel_pane(screen)
        await pilot.press("up")  # after the pause, one move: shown at once
        assert f"def {order[2].name}(" in kernel_pane(screen)

    drive(steps)


def test_a_search_typed_fast_shows_its_kernel_in_every_pane_at_once(monkeypatch):
    monkeypatch.setattr(list_runs, "FOLLOW_QUIET", 30.0)  # each letter's match within a run's time

    async def steps(pilot, screen):
        order = screen.index.kernels_in_order()
        wanted = next(k for k in order[3:] if k.lang == "triton")
        screen.query_one(KernelTable).focus()
        await pilot.press("slash", *wanted.name[-25:])  # its end: unique, and each letter a move
        await pilot.pause()
        assert screen.kernel is wanted
        assert f"def {wanted.name}(" in kernel_pane(screen)  # not the kernel the list passed on the way

    drive(steps)

