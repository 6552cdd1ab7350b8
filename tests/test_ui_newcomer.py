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
