"""``kernelscope run`` without ``--no-ui``: the UI opens at once on the program's progress (RunScreen),
Cancel keeps what compiled as a good bundle and opens the explorer on it, and nothing is left running
however the UI ends.

One real compile (the looping script's ``--pointwise`` graph), shared by the tests that read it; the
others stop the program before it compiles anything.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from kernelscope.ui.app import make_app
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.screens.run import RunJob, RunScreen
from tests.test_run import LOOP, _alive_with


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def wait_for(pilot, predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        await pilot.pause(0.2)


def loop_job(out: Path, tag: str, *extra: str, **options) -> RunJob:
    return RunJob([sys.executable, LOOP, "--pointwise", "--tag", tag, *extra], out, **options)


def drive_job(job: RunJob, steps, join: float = 60):
    """Run the app on ``job`` at 80x24, ``await steps(pilot, app)``, then wait for the job; the app."""
    app = make_app(run_job=job)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await steps(pilot, app)

    asyncio.run(run())
    job.join(join)
    return app


def started(app) -> bool:
    return isinstance(app.screen, RunScreen) and any(e["phase"] == "start" for e in app.screen.events)


@pytest.fixture(scope="module")
def cancelled_mid_run(tmp_path_factory):
    """Run the looping script in the UI (80x24), wait for its graph and a few steps, press c; what a user saw."""
    out = tmp_path_factory.mktemp("ui-run") / "out"
    tag = "ks-ui-run-cancel"
    job = loop_job(out, tag)
    app = make_app(run_job=job)
    seen: dict = {}

    async def steps() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            seen["first_screen"] = type(app.screen).__name__
            seen["title"] = text_of(app, "#run-title")
            seen["stop"] = text_of(app, "#run-stop")
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.graphs >= 1, 240,
                           "the first graph")
            await wait_for(pilot, lambda: "step 2" in text_of(app, "#run-output"), 60, "the program's prints")
            seen["phases"] = text_of(app, "#run-phases")
            seen["status"] = text_of(app, "#run-status")
            seen["output"] = text_of(app, "#run-output")
            seen["keys"] = text_of(app, "#run-keys")
            seen["footer"] = [b.binding.description for b in app.active_bindings.values() if b.binding.show]
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), 120, "the explorer")
            await pilot.pause()
            explorer = app.screen
            seen["kernels"] = [k.name for k in explorer.index.kernels_in_order()]
            seen["stopped"] = explorer.bundle.target.get("stopped", {})
            seen["notes"] = list(explorer.bundle.notes)
            seen["notifications"] = [n.message for n in app._notifications]
            seen["alive_in_explorer"] = _alive_with(tag)

    asyncio.run(steps())
    job.join(60)
    seen["alive_after"] = _alive_with(tag)
    seen["manifest"] = json.loads((out / "bundle.json").read_text(encoding="utf-8"))
    seen["out"] = out
    return seen


def test_progress_screen_shows_the_run_at_once(cancelled_mid_run):
    seen = cancelled_mid_run
    assert seen["first_screen"] == "RunScreen"  # the UI opened before anything compiled
    assert seen["title"].startswith("Running python") and seen["title"].endswith("--pointwise --tag ks-ui-run-cancel")
    assert seen["stop"] == "stops: when the program ends · or c (cancel)"
    assert "graph 1 generated" in seen["phases"] and "started (pid " in seen["phases"]
    assert seen["status"].startswith("graphs 1 · ") and seen["status"].endswith(" s")
    assert "step 2" in seen["output"]  # the program's own prints, while it runs
    assert "torch/_inductor" not in seen["output"]  # not torch's TORCH_LOGS lines (its stderr is full of them)
    assert seen["keys"].startswith("c / escape: cancel")
    assert "Cancel" in seen["footer"] and "Quit" not in seen["footer"]


def test_cancel_opens_the_explorer_on_what_compiled(cancelled_mid_run):
    seen = cancelled_mid_run
    assert seen["kernels"] == ["cpp_fused_add_mul_sin_0"]
    assert seen["stopped"]["reason"] == "cancelled" and seen["stopped"]["message"] == "stopped: cancelled"
    assert seen["notes"][0] == "Stopped: cancelled"
    assert f"stopped: cancelled; the bundle: {seen['out']}" in seen["notifications"]
    m = seen["manifest"]
    assert m["status"] == "ok" and m["target"]["origin"] == "run"


def test_cancel_leaves_nothing_running(cancelled_mid_run):
    assert cancelled_mid_run["alive_in_explorer"] == []  # stopped before the explorer opened
    assert cancelled_mid_run["alive_after"] == []


def test_cancel_before_any_graph_says_no_graph_compiled(tmp_path):
    out, tag = tmp_path / "out", "ks-ui-run-early"
    job = loop_job(out, tag)
    seen: dict = {}

    async def steps(pilot, app) -> None:
        await wait_for(pilot, lambda: started(app), 60, "the program to start")
        seen["alive_before"] = _alive_with(tag)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen.state == "failed", 60, "the cancel")
        seen["status"] = text_of(app, "#run-status")
        seen["keys"] = text_of(app, "#run-keys")
        seen["phases"] = text_of(app, "#run-phases")
        seen["footer"] = [b.binding.description for b in app.active_bindings.values() if b.binding.show]
        seen["alive"] = _alive_with(tag)
        await pilot.press("escape")  # quits, as a failed run's exit status
        await pilot.pause()

    app = drive_job(job, steps)
    assert seen["alive_before"], "the program was not running when cancelled"
    assert seen["status"] == "✗ no graph compiled: stopped: cancelled before the program compiled its first graph"
    assert seen["keys"] == "enter: open the failed bundle (its logs) · escape: quit"
    assert "✗ ended    stopped: cancelled" in seen["phases"] and "wrote the bundle to" in seen["phases"]
    assert "Quit" in seen["footer"] and "Open bundle" in seen["footer"] and "Cancel" not in seen["footer"]
    assert seen["alive"] == [] and _alive_with(tag) == []
    assert app.return_code == 2
    assert json.loads((out / "bundle.json").read_text())["target"]["stopped"]["reason"] == "cancelled"


def test_quitting_the_ui_while_the_program_runs_stops_it(tmp_path):
    out, tag = tmp_path / "out", "ks-ui-run-quit"
    job = loop_job(out, tag)
    seen: dict = {}

    async def steps(pilot, app) -> None:
        await wait_for(pilot, lambda: started(app), 60, "the program to start")
        seen["alive_before"] = _alive_with(tag)
        await pilot.press("ctrl+q")
        await pilot.pause()

    drive_job(job, steps)
    assert seen["alive_before"], "the program was not running when the UI quit"
    assert not job.running and _alive_with(tag) == []
    assert job.result is not None and job.result.stopped == "cancelled"
    assert (out / "bundle.json").is_file()  # what it had is written, as for Cancel


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_crashing_program_shows_its_error_and_opens_the_failed_bundle(tmp_path):
    out = tmp_path / "out"
    job = loop_job(out, "ks-ui-run-crash", "--crash-at", "0")
    seen: dict = {}

    async def steps(pilot, app) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.state == "failed", 120,
                       "the crash")
        seen["status"] = text_of(app, "#run-status")
        seen["keys"] = text_of(app, "#run-keys")
        seen["phases"] = text_of(app, "#run-phases")
        seen["output"] = text_of(app, "#run-output")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), 20, "the explorer")
        seen["error"] = app.screen.bundle.error

    drive_job(job, steps, join=30)
    assert seen["status"].startswith("✗ no graph compiled: the program exited with status 1: "
                                     "RuntimeError: loss went NaN at step 0")
    assert seen["keys"].startswith("enter: open the failed bundle")
    assert "✗ ended    the program exited with status 1" in seen["phases"]
    assert seen["output"].endswith("stderr: RuntimeError: loss went NaN at step 0")  # its traceback's end
    assert seen["error"].startswith("no graph compiled: the program exited with status 1")
    assert "Traceback (most recent call last)" in (out / "logs" / "stderr.txt").read_text()


def test_stop_condition_says_the_flags():
    job = RunJob([sys.executable, LOOP], "/nonexistent/out", graphs=2, timeout=90)
    assert job.stop_condition() == "stops: 2 graphs compiled and called once · after 90 s · or c (cancel)"


def test_cancel_before_the_program_started_still_stops_it(tmp_path):
    """A Cancel that lands before the child exists (the job's thread not yet past Popen) kills it at birth."""
    from kernelscope.capture.program import ProgramRun

    tag = "ks-ui-run-unborn"
    job = ProgramRun([sys.executable, LOOP, "--pointwise", "--tag", tag], tmp_path / "out", timeout=45)
    job.cancel()
    t0 = time.time()
    result = job.run()
    assert time.time() - t0 < 30, "the cancelled program ran on until the --timeout"
    assert result.stopped == "cancelled" and result.status == "failed"
    assert _alive_with(tag) == []


def test_the_run_screen_and_its_job_import_no_torch():
    import subprocess

    code = ("import sys\n"
            "from kernelscope.ui.app import make_app\n"
            "from kernelscope.ui.screens.run import RunJob, RunScreen\n"
            f"job = RunJob([sys.executable, {LOOP!r}], '/nonexistent/out', graphs=1)\n"
            "RunScreen(job)\n"
            "make_app(run_job=job)\n"
            "print([m for m in ('torch', 'triton') if m in sys.modules] or 'clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "clean", out.stderr
