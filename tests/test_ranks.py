"""Every rank of a distributed job side by side: `open` of a real 2-rank TORCH_TRACE folder (torchrun, gloo,
CPU: tests/fixtures/traces/ddp_gloo_cpu) writes one job bundle, `show --job` lists the ranks as columns and
flags what differs (rank 1 alone compiled `rank_only`); damaged or mixed folders say so in one line each
and the other ranks still open."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from tests.conftest import REPO, kernelscope_cmd

DDP = REPO / "tests" / "fixtures" / "traces" / "ddp_gloo_cpu"


def _unpack(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for gz in sorted(DDP.glob("*.log.gz")):
        (folder / gz.name[:-3]).write_bytes(gzip.decompress(gz.read_bytes()))
    return folder


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ddp")
    proc = kernelscope_cmd("open", str(_unpack(root / "trace")), "--no-ui", "-o", str(root / "bundle"))
    assert proc.returncode == 0, proc.stderr
    assert "(2 ranks): 3 compile ids, 5 graphs, 17 kernels" in proc.stderr
    return root / "bundle"


def test_open_of_a_torchrun_job_keeps_every_rank_in_one_bundle(job):
    b = read_bundle(job)
    assert b.environment["ranks"] == [0, 1]
    assert [g.id for g in b.graphs] == ["rank0-0-0-forward", "rank0-0-0-backward", "rank1-0-0-forward",
                                        "rank1-0-0-backward", "rank1-1-0-inference"]
    assert any("side by side" in n for n in b.notes)
    # Each rank's compile time is its own (torch's phase events name the compile without the rank).
    times = {c["compile_id"]: c["graphs"] for c in b.section("compile_time")["compiles"]}
    assert times["rank1/1/0"] == ["rank1-1-0-inference"]


def test_show_job_puts_the_ranks_side_by_side_and_flags_the_frame_one_rank_compiled(job):
    out = kernelscope_cmd("show", str(job), "--job").stdout
    assert out.startswith("job: 2 ranks (0, 1), 2 compiled frames, 2 compiles, 5 graphs, 17 kernels")
    assert "ddp.py:32  loss = cmodel(x).pow(2).mean()\n  compile 0/0  forward at ddp.py:15\n" in out
    assert "    graphs                    forward, backward           forward, backward" in out
    assert "  compile 1/0  rank_only at ddp.py:19  ⚠ only on rank 1" in out
    assert "differs between ranks (1):\n  ⚠ compile 1/0 (rank_only at ddp.py:19): only on rank 1" in out


def test_a_different_fx_graph_on_one_rank_is_flagged(job, tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(job, copy)
    fx = copy / "graphs" / "rank1-0-0-forward" / "fx_post_grad.txt"
    fx.write_text(fx.read_text().replace("relu", "sigmoid"))
    out = kernelscope_cmd("show", str(copy), "--job").stdout
    assert "⚠ compile 0/0 (forward at ddp.py:15): forward FX graph differs: ranks 0 vs ranks 1" in out


def test_one_rank_alone_with_rank(job, tmp_path):
    proc = kernelscope_cmd("open", str(_unpack(tmp_path / "t")), "--rank", "1", "--no-ui", "-o", str(tmp_path / "one"))
    assert proc.returncode == 0 and "(rank 1 of 2): 2 compile ids, 3 graphs, 9 kernels" in proc.stderr
    b = read_bundle(tmp_path / "one")
    assert b.environment["ranks"] == [1] and any("without --rank opens every rank" in n for n in b.notes)


def test_a_cut_log_mixed_jobs_and_an_idle_rank_each_say_so_and_the_rest_opens(tmp_path):
    trace = _unpack(tmp_path / "t")
    rank1 = trace / "dedicated_log_torch_trace_rank_1.log"
    rank1.write_bytes(rank1.read_bytes()[:300_000])  # killed mid-write
    shutil.copy(trace / "dedicated_log_torch_trace_rank_0.log", trace / "dedicated_log_torch_trace_rank_0_rerun.log")
    (trace / "dedicated_log_torch_trace_rank_2.log").write_text(
        "".join((trace / "dedicated_log_torch_trace_rank_0.log").read_text().splitlines(True)[:3]))
    proc = kernelscope_cmd("open", str(trace), "--no-ui", "-o", str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note: ")]
    assert any("dedicated_log_torch_trace_rank_1.log ends inside a line: the log was cut short" in n for n in notes)
    assert any("rank 0 has 2 logs: kept dedicated_log_torch_trace_rank_0.log" in n
               and "left out dedicated_log_torch_trace_rank_0_rerun.log" in n for n in notes)
    assert any("rank 2's log holds no compile" in n for n in notes)
    out = kernelscope_cmd("show", str(tmp_path / "b"), "--job").stdout
    assert out.startswith("job: 3 ranks (0, 1, 2)")
    assert "backward graph only on rank 0" in out  # rank 1's log ends before its backward
    assert len(read_bundle(tmp_path / "b").kernels) == 11  # rank 0 whole, rank 1 up to the cut


def test_the_job_screen_shows_the_ranks_and_enter_opens_a_compiles_graphs(job):
    import asyncio

    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens.explorer import ExplorerScreen
    from kernelscope.ui.screens.tools import JobScreen
    from kernelscope.ui.widgets.code_view import CodeView

    async def run() -> None:
        app = make_app(str(job))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await pilot.press("J")
            await pilot.pause()
            assert isinstance(app.screen, JobScreen)
            view = app.screen.query_one("#job-text", CodeView)
            lines = view.doc.lines
            at = next(i for i, line in enumerate(lines) if "compile 1/0  rank_only" in line)
            assert "⚠ only on rank 1" in lines[at]
            view.move_cursor(at + 2)  # a line of that compile's table
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ExplorerScreen)
            assert app.screen.kernel is not None and app.screen.kernel.graph == "rank1-1-0-inference"

    asyncio.run(run())


@pytest.mark.slow
def test_run_of_torchrun_writes_one_job_bundle_with_every_rank(tmp_path):
    """`kernelscope run -o OUT -- python -m torch.distributed.run --nproc-per-node 2 ddp.py` (gloo, CPU): the
    same job as the fixture, run for real; one bundle, both ranks, rank 1's extra compile flagged."""
    import socket
    import sys

    shutil.copy(DDP / "ddp.py", tmp_path / "ddp.py")
    with socket.socket() as s:  # a free port for the job's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(tmp_path / "out"), "--", sys.executable, "-m",
                           "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                           "--master-port", str(port), "ddp.py", cwd=str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    b = read_bundle(tmp_path / "out")
    assert b.environment["ranks"] == [0, 1] and len(b.graphs) == 5
    assert any("ranks 0, 1 side by side" in n for n in b.notes)
    out = kernelscope_cmd("show", str(tmp_path / "out"), "--job").stdout
    assert "  compile 1/0  rank_only at ddp.py:19  ⚠ only on rank 1" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp.py", "out"]
    _source_pane_marks_the_calling_line(tmp_path / "out")


def _source_pane_marks_the_calling_line(bundle: Path) -> None:
    """The script (the run's one file of the user's) in the source pane, `loss = cmodel(x)...` marked »;
    enter on it follows to the kernels of the graphs compiled from it."""
    import asyncio

    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    async def run() -> None:
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await pilot.press("2")
            await pilot.pause()
            view = app.screen.query_one("#source", CodeView)
            assert view.doc.lines[31].strip() == "loss = cmodel(x).pow(2).mean()"
            assert view.labels(31) == "»32" and view.labels(30) == " 31"
            view.move_cursor(31)
            await pilot.press("enter")
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert any(m.startswith("the graphs compiled from line 32 fed 16 kernels") for m in said), said

    asyncio.run(run())


def test_the_report_has_the_job_with_its_ranks_side_by_side(job):
    md = kernelscope_cmd("report", str(job), "--format", "md").stdout
    assert "### Compiles: where each came from, ranks side by side" in md
    assert "  compile 1/0  rank_only at ddp.py:19  ⚠ only on rank 1" in md
    html = kernelscope_cmd("report", str(job), "--format", "html").stdout
    assert "Compiles: where each came from" in html and "only on rank 1" in html


def test_after_a_bench_the_job_view_gives_each_compiles_device_time(tmp_path):
    """tiny_gpt with a bench record stored as bench/record.py stores it (from a made-up profile,
    tests/test_export_trace.bench): each compile's launches' device time in one compiled call."""
    from tests.test_export_trace import bench

    copy = tmp_path / "tiny_gpt"
    shutil.copytree(REPO / "tests" / "fixtures" / "gpu" / "tiny_gpt", copy)
    bench(copy)
    rows = read_bundle(copy).extra["bench"]["run"]["per_kernel"]
    out = kernelscope_cmd("show", str(copy), "--job").stdout
    total = sum(r["us"] for r in rows)
    shown = f"{total:.1f} µs" if total < 1000 else f"{total / 1000:.2f} ms"
    assert f"device time (bench)       {shown}" in out, out


def _log_starting(path: Path, stamp: str, rank: int) -> None:
    import json

    path.write_text(f"V{stamp} 1234 torch/_logging/structured.py:28] "
                    + json.dumps({"dynamo_start": {"stack": []}, "rank": rank, "frame_id": 0,
                                  "frame_compile_id": 0, "attempt": 0}) + "\n")


@pytest.mark.parametrize("first, second", [("0430 23:59:59.000000", "0501 00:00:01.000000"),
                                           ("0228 23:59:59.000000", "0301 00:00:01.000000"),
                                           ("1231 23:59:59.000000", "0101 00:00:01.000000")])
def test_ranks_that_start_two_seconds_apart_across_a_month_or_year_end_are_one_job(tmp_path, first, second):
    from kernelscope.report.trace_folder import sort_folder

    _log_starting(tmp_path / "dedicated_log_torch_trace_rank_0_x.log", first, 0)
    _log_starting(tmp_path / "dedicated_log_torch_trace_rank_1_y.log", second, 1)
    folder = sort_folder(tmp_path)
    assert sorted(folder.ranks) == [0, 1] and not folder.notes, folder.notes


def test_two_runs_of_a_job_in_one_folder_are_not_mixed_rank_by_rank(tmp_path):
    from kernelscope.report.trace_folder import sort_folder

    for rank, suffix, stamp in ((0, "zzz", "0501 10:00:00.000000"), (1, "aaa", "0501 10:00:01.000000"),  # run A
                                (0, "aaa", "0501 10:20:00.000000"), (1, "zzz", "0501 10:20:01.000000")):  # run B
        _log_starting(tmp_path / f"dedicated_log_torch_trace_rank_{rank}_{suffix}.log", stamp, rank)
    folder = sort_folder(tmp_path)
    kept = {r: [p.name for p in paths] for r, paths in folder.ranks.items()}
    assert kept == {0: ["dedicated_log_torch_trace_rank_0_aaa.log"], 1: ["dedicated_log_torch_trace_rank_1_zzz.log"]}
    assert any("rank 1 has 2 logs: kept dedicated_log_torch_trace_rank_1_zzz.log" in n for n in folder.notes)
