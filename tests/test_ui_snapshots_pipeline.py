"""Snapshot tests (pytest-textual-snapshot) of the Triton pipeline view at 80x24, on add_relu's recorded
H200 stages (tests/fixtures/gpu): compact SASS, side by side with line mapping, a stage diff.

Update after an intended change with ``pytest tests/test_ui_snapshots_pipeline.py --snapshot-update``.
"""

from __future__ import annotations

import pytest

from kernelscope.ui.app import make_app
from kernelscope.ui.widgets.pipeline_view import PipelineView

from .conftest import GPU_FIXTURES

SMALL = (80, 24)


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELSCOPE_THEME", raising=False)


def opened_with(*keys: str, down_to: str = ""):
    """Press p in the explorer, wait for the stages and the highlighting, press ``keys``, then move the
    left pane's cursor down to the first line holding ``down_to``."""

    async def run_before(pilot):
        app = pilot.app
        while not app.highlighting_ready:
            await pilot.pause(0.01)
        await pilot.press("p")
        await pilot.pause()
        view = app.screen.query_one(PipelineView)
        while not view.stages:
            await pilot.pause(0.02)
        await pilot.pause()
        await pilot.press(*keys)
        if down_to:
            target = next(i for i, text in enumerate(view.left.lines) if down_to in text)
            await pilot.press(*["down"] * (target - view.left.cursor))
        await pilot.pause()

    return run_before


def app():
    return make_app(str(GPU_FIXTURES / "add_relu"))


def test_pipeline_compact_sass_80x24(snap_compare):
    # SASS without nvdisasm's //## File lines; the cursor on the first load, mapped to source line 24.
    assert snap_compare(app(), terminal_size=SMALL, run_before=opened_with("[", down_to="LDG.E"))


def test_pipeline_side_by_side_source_and_ptx_80x24(snap_compare):
    # Source | PTX, the cursor on the tl.load line: its PTX lines are marked on the right.
    assert snap_compare(app(), terminal_size=SMALL, run_before=opened_with("s", "}", "}", "}", down_to="tl.load(in_ptr0"))


def test_pipeline_diff_ttir_to_ttgir_80x24(snap_compare):
    assert snap_compare(app(), terminal_size=SMALL, run_before=opened_with("]", "]", "d"))
