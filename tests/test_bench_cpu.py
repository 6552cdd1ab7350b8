"""The CPU bench path end to end: one real run (few calls, small size) shared by every test, the
results stored in the bundle and shown again by the Bench view; cancel from the view."""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import pytest

from kernelscope.bundle.io import read_bundle
from tests.conftest import kernelscope_cmd, seeded_cache

QUICK = ("--reps", "5", "--budget", "0", "--warmup", "2", "--profile-calls", "3")


@pytest.fixture(scope="session")
def cpu_bench(cpu_add_relu, tmp_path_factory):
    """A copy of the CPU add_relu capture, benched once: (bundle path, CLI stdout)."""
    root = tmp_path_factory.mktemp("bench")
    bundle = root / "add_relu"
    shutil.copytree(cpu_add_relu, bundle)
    env = {"KERNELSCOPE_CACHE_DIR": str(seeded_cache(cpu_add_relu, root / "cache"))}
    proc = kernelscope_cmd("bench", str(bundle), *QUICK, env=env)
    assert proc.returncode == 0, proc.stderr
    return bundle, proc.stdout, root / "cache"


def test_cpu_bench_prints_counts_times_and_correctness(cpu_bench):
    _, out, _ = cpu_bench
    assert out.startswith("CPU: ")
    lines = out.splitlines()
    computed = [line.split() for line in lines if line.strip().startswith(("eager ", "compiled "))][:2]
    assert computed[0][1:3] == ["2", "5"] and computed[1][1:3] == ["1", "3"]
    assert "Measured per call (CPU)" in out
    assert "correctness OK" in out
    assert "cpp_fused_add_relu_0" in out


def test_cpu_bench_is_stored_with_device_clocks_versions_settings(cpu_bench):
    bundle, _, cache = cpu_bench
    run = read_bundle(bundle).extra["bench"]["run"]
    assert run["device"]["device"] == "cpu"
    assert run["clocks"]["before"] and run["clocks"]["after"]
    assert run["versions"]["torch"]
    assert run["settings"]["reps"] == 5 and run["settings"]["device"] == "cpu"
    # the profiler saw the two eager ops and the one fused C++ kernel, once per call
    assert {k["name"] for k in run["eager"]["kernels"]} >= {"aten::add", "aten::relu"}
    assert run["eager"]["launches_per_call"] == 2
    assert [k["name"] for k in run["compiled"]["kernels"]] == ["cpp_fused_add_relu_0"]
    (row,) = run["per_kernel"]
    assert row["bytes_read"] == 2 * 65536 * 4 and row["bytes_written"] == 65536 * 4
    assert row["us"] > 0 and row["gbps"] > 0 and row["pct_copy"] > 0
    assert run["eager"]["e2e"]["runs"] >= 5 and run["compiled"]["e2e"]["median_us"] > 0
    assert run["correctness"]["ok"] and run["correctness"]["nan_compiled"] == 0
    # the copy ceiling was measured on this machine and cached, with its method
    cached = json.loads((cache / "ceilings.json").read_text())
    (entry,) = cached.values()
    assert entry["copy"]["gbps"] > 0 and "copy_" in entry["copy"]["method"]
    assert run["ceilings"]["copy"]["gbps"] == entry["copy"]["gbps"]
    # the host probe's fastest figure is cached too, and every timing block was tagged with it
    assert entry["host_probe"]["us"] > 0
    host = run["compiled"]["e2e"]["host"]
    assert host["blocks"] >= 1 and 0 <= host["full_speed_blocks"] <= host["blocks"]
    assert host["probe_reference_us"] >= entry["host_probe"]["us"]


def test_cpu_bench_says_how_fast_the_host_ran(cpu_bench):
    _, out, _ = cpu_bench
    line = next(line for line in out.splitlines() if "host speed:" in line)
    assert re.search(r"eager \d+/\d+ blocks \(\d+%\), compiled \d+/\d+ blocks", line)


def test_host_gate_keeps_full_speed_blocks_and_falls_back_to_all():
    from kernelscope.bench.timing import HostGate

    gate = HostGate(None)
    for probe, xs in [(100.0, [10.0, 11.0]), (180.0, [30.0, 31.0]), (103.0, [12.0]), (250.0, [40.0])]:
        gate.add("compiled", probe, xs)
    assert gate.reference_us() == 100.0
    assert gate.samples("compiled", 2) == [10.0, 11.0, 12.0]  # the blocks within 10% of the fastest probe
    assert sorted(gate.samples("compiled", 4)) == [10.0, 11.0, 12.0, 30.0, 31.0, 40.0]  # too few: every block
    # enough samples but from too few blocks: a couple of fast probes in a slow stretch do not count
    assert not gate.enough("compiled", 3) and len(gate.samples("compiled", 3)) == 6
    report = gate.report("compiled", 2)
    assert report["blocks"] == 4 and report["full_speed_blocks"] == 2 and report["gated"]
    assert report["all_median_us"] == 30.0
    # a faster host seen earlier (cached) sets the bar: this run never reached it
    slow = HostGate(60.0)
    slow.add("eager", 100.0, [10.0] * 5)
    assert slow.reference_us() == 60.0 and slow.quiet("eager")[0] == 0
    assert not slow.report("eager", 5)["gated"] and slow.samples("eager", 5) == [10.0] * 5


def test_cpu_sweep_table_and_plot(cpu_bench):
    bundle, _, cache = cpu_bench
    proc = kernelscope_cmd("bench", str(bundle), "--sweep", "--sizes", "64,2**12", *QUICK,
                           env={"KERNELSCOPE_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert "Sweep (CPU)" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.strip().split()[:1] in (["64"], ["4096"])]
    assert [r.split()[0] for r in rows] == ["64", "4096"]
    assert all(re.search(r" \d+\.\d\dx ", r) for r in rows)  # the speedup column
    assert "|" in proc.stdout  # the 1x mark of the speedup bars
    sweep = read_bundle(bundle).extra["bench"]["sweep"]
    assert [r["size"] for r in sweep["rows"]] == [64, 4096]
    assert "run" in read_bundle(bundle).extra["bench"]  # a sweep keeps the earlier run


def test_bench_view_shows_stored_results_on_reopen(cpu_bench):
    async def scenario():
        from textual.app import App

        from kernelscope.ui.widgets.bench_view import BenchView

        bundle, _, _ = cpu_bench

        class Host(App):
            def compose(self):
                yield BenchView(read_bundle(bundle))

        async with Host().run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            text = str(pilot.app.query_one("#bench-text").render())
            assert "Measured per call (CPU)" in text
            assert "cpp_fused_add_relu_0" in text
            assert "last run" in str(pilot.app.query_one("#bench-status").render())

    asyncio.run(scenario())


def test_bench_view_counts_without_a_bench(ref_bundles):
    async def scenario():
        from textual.app import App

        from kernelscope.ui.widgets.bench_view import BenchView

        class Host(App):
            def compose(self):
                yield BenchView(read_bundle(ref_bundles["add_relu"]))

        async with Host().run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            text = str(pilot.app.query_one("#bench-text").render())
            assert "No bench has run" in text
            assert "not benched yet" in str(pilot.app.query_one("#bench-status").render())

    asyncio.run(scenario())


def test_bench_view_cancel_kills_the_child(cpu_add_relu, tmp_path):
    async def scenario():
        from textual.app import App

        from kernelscope.ui.widgets.bench_view import BenchView

        bundle = tmp_path / "b"
        shutil.copytree(cpu_add_relu, bundle)

        class Host(App):
            def compose(self):
                yield BenchView(read_bundle(bundle))

        async with Host().run_test(size=(100, 30)) as pilot:
            view = pilot.app.query_one(BenchView)
            view.focus()
            await pilot.press("r")
            await pilot.pause(0.5)
            assert view.running
            await pilot.press("c")
            for _ in range(100):
                await pilot.pause(0.1)
                if not view.running:
                    break
            assert not view.running
            assert "cancelled" in str(pilot.app.query_one("#bench-status").render())
        assert "bench" not in read_bundle(bundle).extra

    asyncio.run(scenario())


def _tree(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_bench_says_where_it_saved(cpu_bench):
    bundle, _, cache = cpu_bench
    proc = kernelscope_cmd("bench", str(bundle), *QUICK, "-q", env={"KERNELSCOPE_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert f"saved in {bundle}/bundle.json" in proc.stderr


def test_bench_no_save_leaves_the_bundle_unchanged(cpu_add_relu, tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(cpu_add_relu, bundle)
    before = _tree(bundle)
    proc = kernelscope_cmd("bench", str(bundle), "--no-save", *QUICK, "-q",
                           env={"KERNELSCOPE_CACHE_DIR": str(seeded_cache(cpu_add_relu, tmp_path / "cache"))})
    assert proc.returncode == 0, proc.stderr
    assert "Measured per call (CPU)" in proc.stdout  # the results are printed ...
    assert "not saved (--no-save)" in proc.stderr  # ... and it says they went nowhere
    assert _tree(bundle) == before


def test_bench_of_a_read_only_bundle_says_so_and_goes_on(cpu_add_relu, tmp_path):
    bundle = tmp_path / "ro"
    shutil.copytree(cpu_add_relu, bundle)
    before = _tree(bundle)
    cache = seeded_cache(cpu_add_relu, tmp_path / "c")
    modes = {p: p.stat().st_mode for p in [bundle, *bundle.rglob("*")]}
    for p in [*bundle.rglob("*"), bundle]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        proc = kernelscope_cmd("bench", str(bundle), *QUICK, "-q", env={"KERNELSCOPE_CACHE_DIR": str(cache)})
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert proc.returncode == 0, proc.stderr
    assert "cpp_fused_add_relu_0" in proc.stdout
    assert f"not saved: {bundle} is read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert _tree(bundle) == before


def test_cpu_bench_times_every_launch_sums_them_and_says_where_the_time_goes(cpu_bench):
    bundle, out, _ = cpu_bench
    run = read_bundle(bundle).extra["bench"]["run"]
    check = run["sum_check"]
    assert check["untimed"] == 0 and check["launches"] == 1
    assert abs(check["launches_us"] - check["total_us"]) <= 0.01 * check["total_us"] and check["ok"]
    line = next(line for line in out.splitlines() if line.startswith("sum check"))
    assert line.startswith("sum check OK") and "1 of 1 launches timed" in line
    where = out.split("Where the time goes", 1)[1].splitlines()
    row = next(r for r in where if "cpp_fused_add_relu_0" in r)
    assert "100.0%" in row  # the one kernel is the whole call's device time
    (top,) = run["where_time_goes"]
    assert top["launches"] == 1 and top["gbps"] > 0
    # counts side by side, the difference named
    explained = out.split("Kernel counts per call", 1)[1].splitlines()
    eager = next(r for r in explained if r.strip().startswith("eager"))
    assert eager.split()[1:3] == ["2", "2"] and "they agree" in eager
    assert run["counts_explained"]["compiled"]["computed"] == 1
