"""Snapshot tests (pytest-textual-snapshot): the main screens at 80x24 and 160x48.

Update after an intended change with ``pytest tests/test_ui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.ui.app import make_app

from .conftest import REFERENCE

SMALL = (80, 24)
LARGE = (160, 48)
# Every test here on one pytest-xdist worker under --dist loadgroup (make test's stock-Textual pass): the
# module fixtures below remake one fixed folder in /tmp, which two workers would remake under each other.
pytestmark = pytest.mark.xdist_group("snapshots-fixed-tmp-paths")


async def highlighted(pilot):
    """Snapshots show the settled screen: syntax colours arrive one frame after the first."""
    while not pilot.app.highlighting_ready:
        await pilot.pause(0.01)


@pytest.fixture(scope="module")
def snap_bundles(ref_bundles):
    """The reference bundles at one fixed path, naming their trace at one fixed path: the Info pane shows
    both, and a path whose length changed from machine to machine would move scrollbars in the snapshots."""
    root = Path("/tmp/kernelscope-snapshot-bundles")
    shutil.rmtree(root, ignore_errors=True)
    out = {}
    for case in ("mlp_train", "with_break", "softmax"):
        out[case] = root / case
        shutil.copytree(ref_bundles[case], out[case])
        manifest = out[case] / "bundle.json"  # it names the trace it was read from: where the checkout is
        manifest.write_text(manifest.read_text().replace(str(REFERENCE), "/shared/reference"))
    yield out
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))  # no "recent captures" in the gallery
    monkeypatch.delenv("KERNELSCOPE_THEME", raising=False)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_gallery(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=highlighted)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_explorer_training_step(snap_compare, snap_bundles, size):
    # The gelu kernel of the forward graph: its FX nodes, user line and launch are marked.
    assert snap_compare(make_app(str(snap_bundles["mlp_train"])), run_before=highlighted, terminal_size=size, press=["down"])


def test_explorer_fx_tab_80x24(snap_compare, snap_bundles):
    assert snap_compare(make_app(str(snap_bundles["mlp_train"])), run_before=highlighted, terminal_size=SMALL, press=["down", "3"])


def test_explorer_graph_break_160x48(snap_compare, snap_bundles):
    assert snap_compare(make_app(str(snap_bundles["with_break"])), run_before=highlighted, terminal_size=LARGE, press=["6", "enter"])


def test_explorer_presentation_light_160x48(snap_compare, snap_bundles):
    app = make_app(str(snap_bundles["softmax"]), presentation=True, theme="textual-light")
    assert snap_compare(app, run_before=highlighted, terminal_size=LARGE, press=["4"])


def test_capture_error_80x24(snap_compare):
    assert snap_compare(make_app("no_such_sample"), run_before=highlighted, terminal_size=SMALL, press=["_"])


@pytest.fixture(scope="module")
def fixture_bundles():
    """Committed GPU fixtures (nothing from outside the checkout) at one fixed path, for the same reason as above."""
    root = Path("/tmp/kernelscope-snapshot-fixtures")
    shutil.rmtree(root, ignore_errors=True)
    here = Path(__file__).parent / "fixtures" / "gpu"
    out = {}
    for case in ("softmax", "softmax_bench_cpu"):
        out[case] = root / case
        shutil.copytree(here / case, out[case])
    yield out
    shutil.rmtree(root, ignore_errors=True)


def test_explorer_long_kernel_name_80x24(snap_compare, fixture_bundles):
    # softmax's kernel name is longer than the Kernels pane: it shortens in the middle and its nodes,
    # bytes moved and user line stay in view; the header keeps the break count.
    assert snap_compare(make_app(str(fixture_bundles["softmax"])), run_before=highlighted, terminal_size=SMALL,
                        press=["1"])


def test_bench_view_80x24(snap_compare, fixture_bundles, monkeypatch):
    # A GPU capture benched on the CPU: the view says it re-captured for the CPU; r runs, v picks the device.
    # On a machine without a GPU (pinned: the status names the device the next bench runs on).
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")
    assert snap_compare(make_app(str(fixture_bundles["softmax_bench_cpu"])), run_before=highlighted,
                        terminal_size=SMALL, press=["b"])
