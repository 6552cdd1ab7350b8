"""`kernelscope open` reads every trace torch writes, not only a successful Inductor job's: a compile whose custom
backend raised (its exception whole, the user line it points at, the graph Dynamo captured), frames compiled
by aot_eager and eager (their Dynamo graphs, guards, breaks and recompiles, each row saying why it has no
kernels), a trace of Dynamo's timed phases only, a trace with damaged lines, and rank folders as they come
(stray files, ranks named only in the file names, logs of another run). Traces recorded here (torch 2.13,
CPU): tests/fixtures/traces/failing_backend_cpu, aot_eager_cpu and ddp_gloo_cpu."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from tests.conftest import REPO, kernelscope_cmd

TRACES = REPO / "tests" / "fixtures" / "traces"
LOG = "dedicated_log_torch_trace.log"


def _trace(kind: str, folder: Path) -> Path:
    """The fixture ``kind``'s logs (unpacked) alone in ``folder``."""
    folder.mkdir(parents=True)
    for log in sorted((TRACES / kind).glob("*.log*")):
        data = log.read_bytes()
        name = log.name
        if name.endswith(".gz"):
            data, name = gzip.decompress(data), name[:-3]
        (folder / name).write_bytes(data)
    return folder


def _open(trace: Path, out: Path, *extra: str):
    proc = kernelscope_cmd("open", str(trace), "--no-ui", "-o", str(out), *extra)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def aot_eager(tmp_path_factory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("aot-eager")
    proc = _open(_trace("aot_eager_cpu", root / "trace"), root / "bundle")
    assert proc.returncode == 0, proc.stderr
    return root / "bundle", proc


def test_a_failed_compile_shows_its_exception_whole_and_the_graph_dynamo_captured(tmp_path):
    proc = _open(_trace("failing_backend_cpu", tmp_path / "t"), tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "1 compile id, 1 graph (1 with no generated code, 1 failed), 0 kernels" in proc.stderr
    out = proc.stdout
    assert "  0-0-dynamo             dynamo     0 kernels  f at failing_backend.py:9\n" in out
    # The message whole (both of its lines), its type, and the line of the user's backend that raised.
    assert ("no kernels: compile failed: backend broken_backend raised\n"
            "                           BackendCompilerFailed: backend='broken_backend' raised:\n"
            "                           ValueError: broken_backend refuses graphs with sin:\n"
            "                             found 1 sin node (sin = torch.sin(x))\n"
            "                           at failing_backend.py:6 in broken_backend: raise ValueError(") in out
    assert "was the backend inductor" not in out
    assert "can: report; diff\n" in out  # nothing to bench: no output code
    bench = kernelscope_cmd("bench", str(tmp_path / "b"), "--run-bundle-code")
    assert bench.returncode != 0 and bench.stderr.strip().endswith(
        "0-0-dynamo: no output code in the bundle (compile failed: backend broken_backend raised)")
    fx = kernelscope_cmd("show", str(tmp_path / "b"), "--artifact", "fx-dynamo", "--graph", "0-0-dynamo")
    assert fx.returncode == 0 and "torch.sin(l_x_)" in fx.stdout
    job = kernelscope_cmd("show", str(tmp_path / "b"), "--job").stdout
    assert ("    no kernels                compile failed: backend broken_backend raised\n"
            "                              BackendCompilerFailed: backend='broken_backend' raised:\n"
            "                              ValueError: broken_backend refuses graphs with sin:\n") in job


def test_frames_of_aot_eager_and_eager_are_listed_with_why_they_have_no_kernels(aot_eager):
    bundle, proc = aot_eager
    assert "5 compile ids, 5 graphs (5 with no generated code), 0 kernels" in proc.stderr
    b = read_bundle(bundle)
    assert [(g.id, g.code_name) for g in b.graphs] == [
        ("0-0-1-dynamo", "f"), ("0-1-1-dynamo", "f"), ("1-0-dynamo", "torch_dynamo_resume_in_f_at_8"),
        ("1-1-dynamo", "torch_dynamo_resume_in_f_at_8"), ("2-0-dynamo", "g")]
    out = proc.stdout
    assert out.count("no kernels: backend aot_eager (or another AOTAutograd backend, not Inductor): no generated "
                     "code") == 4
    assert "  2-0-dynamo             dynamo     0 kernels  g at aot_eager.py:12\n                         no kernels: " \
           "backend eager (or a custom backend, not Inductor): Dynamo graph only" in out
    # Dynamo's graph break, the recompile and each compile's guards, as for an Inductor job.
    assert "graph breaks (2):\n  aot_eager.py:8: Dynamo does not know how to trace builtin operator `print`" in out
    assert "recompiles (2):\n  aot_eager.py:6: 0/0: tensor 'x' rank mismatch. expected 1, actual 2" in out
    assert "guards of 2/0 (2-0-dynamo): 12" in out
    assert "was the backend inductor" not in out and "bench" not in out.split("\n\n")[0]
    fx = kernelscope_cmd("show", str(bundle), "--artifact", "fx-aot", "--graph", "1-0-dynamo").stdout
    assert "torch.ops.aten.sum.default" in fx  # the AOTAutograd graph aot_eager ran
    job = kernelscope_cmd("show", str(bundle), "--job").stdout
    assert job.startswith("job: 3 compiled frames, 5 compiles, 5 graphs, 0 kernels")
    assert "aot_eager.py:18  cf(torch.randn(8, 3))\n  compile 1/1  torch_dynamo_resume_in_f_at_8" in job
    assert "    no kernels                backend eager (or a custom backend, not Inductor)" in job


def test_a_trace_of_timed_phases_only_opens_with_a_note(tmp_path):
    whole = _trace("aot_eager_cpu", tmp_path / "whole") / LOG
    kept, keep = [], False
    for line in whole.read_text().splitlines(True):
        if not line.startswith("\t"):
            keep = '{"chromium_event"' in line
        if keep:
            kept.append(line)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / LOG).write_text("".join(kept))
    proc = _open(tmp_path / "t", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "0 compile ids, 0 graphs, 0 kernels" in proc.stderr
    assert re.search(r"note: the trace holds only Dynamo's timed phases \(\d+ chromium events; `kernelscope show "
                     r"--compile` lists where the compile time went\)", proc.stdout)
    compile_time = kernelscope_cmd("show", str(tmp_path / "b"), "--compile").stdout
    assert compile_time.startswith("Compile time: ") and "AOTAutograd" in compile_time
    assert re.search(r"\ngraph 2/0: \d\.\d\d s", compile_time)  # no frame recorded: no name to give
    assert "per kernel: no kernel was generated" in compile_time


def test_damaged_lines_are_left_out_with_a_note_and_the_rest_opens(tmp_path):
    trace = _trace("aot_eager_cpu", tmp_path / "t")
    lines = (trace / LOG).read_text().splitlines(True)
    # g's Dynamo graph record cut mid-envelope, and a line inside a timed phase's JSON payload lost.
    event = next(i for i, line in enumerate(lines) if '{"chromium_event"' in line)
    del lines[lines.index("\t},\n", event)]  # its args object left open
    at = next(i for i, line in enumerate(lines) if '{"dynamo_output_graph"' in line and '"frame_id": 2' in line)
    lines[at] = lines[at][:lines[at].index('"frame_id"')] + "\n"
    (trace / LOG).write_text("".join(lines))
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert f"note: 1 damaged TORCH_TRACE line(s) left out ({LOG} line {at + 1}: not JSON:" in proc.stdout
    assert "note: 1 chromium event(s) with a damaged payload (not JSON) left out" in proc.stdout
    assert "4 compile ids, 4 graphs (4 with no generated code), 0 kernels" in proc.stderr  # all but g's, lost
    assert "  1-1-dynamo " in proc.stdout and "  2-0-dynamo " not in proc.stdout


# ---------------------------------------------------------------- rank folders as they come

def _ddp(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for gz in sorted((TRACES / "ddp_gloo_cpu").glob("*.log.gz")):
        (folder / gz.name[:-3]).write_bytes(gzip.decompress(gz.read_bytes()))
    return folder


def test_stray_files_in_a_rank_folder_are_left_out_with_a_note(tmp_path):
    trace = _ddp(tmp_path / "t")
    (trace / "another.log").write_text("")
    (trace / "stdout.log").write_text("step 1 loss 0.25\nstep 2 loss 0.19\n")
    (trace / "some_other_file.txt").write_text("notes\n")
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "(2 ranks): 3 compile ids, 5 graphs, 17 kernels" in proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note: ")]
    assert "note: not read: some_other_file.txt (not a .log file; `kernelscope open FILE` reads one file whatever " \
           "its name)" in notes
    assert any(n.startswith("note: not read: ") and "another.log (empty: not a TORCH_TRACE log)" in n
               and "stdout.log (no TORCH_TRACE record in its first 200 lines: not a TORCH_TRACE log)" in n for n in notes)
    assert "can: bench (runs the bundle's output code" in proc.stdout  # an Inductor job: its code can run


@pytest.mark.parametrize("tail", ["", "_x3k9q2"])
def test_ranks_named_only_in_the_file_names_open_as_ranks(tmp_path, tail):
    """Records without a rank (a job whose logs torch named per rank): ranks from the names, never an IndexError."""
    trace = _ddp(tmp_path / "t")
    for log in sorted(trace.glob("*.log")):
        text = re.sub(r'"rank": \d+, ', "", log.read_text())
        log.unlink()
        (trace / log.name.replace(".log", f"{tail}.log")).write_text(text)
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "(2 ranks): 3 compile ids, 5 graphs, 17 kernels" in proc.stderr
    b = read_bundle(tmp_path / "b")
    assert b.environment["ranks"] == [0, 1] and b.graphs[-1].id == "rank1-1-0-inference"
    one = _open(trace, tmp_path / "one", "--rank", "1")
    assert one.returncode == 0 and "(rank 1 of 2): 2 compile ids, 3 graphs, 9 kernels" in one.stderr


def test_a_log_of_another_run_in_the_folder_is_told_apart(tmp_path):
    trace = _ddp(tmp_path / "t")
    old = (trace / "dedicated_log_torch_trace_rank_1.log").read_text()
    # The same rank's log from a run six hours earlier, left in the folder (glog stamps: MMDD HH:MM:SS).
    earlier = re.sub(r"(?m)^([VIWEC]\d{4}) 13:", r"\1 07:", old)
    (trace / "dedicated_log_torch_trace_rank_1_earlier.log").write_text(earlier)
    (trace / "dedicated_log_torch_trace_rank_2_earlier.log").write_text(earlier.replace('"rank": 1', '"rank": 2'))
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "(2 ranks): 3 compile ids, 5 graphs, 17 kernels" in proc.stderr
    assert re.search(r"note: this folder holds logs of 2 runs started apart \(a job's ranks start together\): opened "
                     r"ranks 0, 1 \(started 12-05 13:2\d:\d\d\); left out dedicated_log_torch_trace_rank_1_earlier.log "
                     r"\(started 12-05 07:2\d:\d\d\), dedicated_log_torch_trace_rank_2_earlier.log \(started 12-05 "
                     r"07:2\d:\d\d\); `kernelscope open FILE` opens one alone", proc.stdout), proc.stdout
    # --rank 2 is the earlier run's only: that run is the one opened.
    two = _open(trace, tmp_path / "two", "--rank", "2")
    assert two.returncode == 0 and "(rank 2 of 2)" in two.stderr


def test_a_copied_log_whose_records_name_another_rank_is_read_as_its_file_names(tmp_path):
    trace = _ddp(tmp_path / "t")
    shutil.copy(trace / "dedicated_log_torch_trace_rank_1.log", trace / "dedicated_log_torch_trace_rank_2.log")
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "(3 ranks)" in proc.stderr
    assert "note: dedicated_log_torch_trace_rank_2.log: its records say rank 1, its name rank 2: read as rank 2 " \
           "(a copied or renamed log?)" in proc.stdout
    assert sorted({g.compile_id.split("/")[0] for g in read_bundle(tmp_path / "b").graphs}) == ["rank0", "rank1", "rank2"]


def test_the_explorer_of_a_failed_compile_says_why_and_offers_no_bench(tmp_path):
    import asyncio

    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens.explorer import ExplorerScreen, TitleLine
    from kernelscope.ui.widgets.code_view import CodeView

    assert _open(_trace("failing_backend_cpu", tmp_path / "t"), tmp_path / "b").returncode == 0

    async def run() -> None:
        app = make_app(str(tmp_path / "b"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, ExplorerScreen)
            actions = {ab.binding.action for ab in app.screen.active_bindings.values()}
            assert "bench" not in actions and "goto('fx')" in actions  # nothing to run; its graph to read
            assert "1 graph (1 failed) · 0 kernels" in app.screen.query_one(TitleLine).render()
            fx = app.screen.query_one("#fx", CodeView).placeholder
            assert fx == "Graph 0-0-dynamo has no post-grad FX graph. It has: Dynamo ([ and ] switch)."
            output = app.screen.query_one("#output", CodeView).placeholder
            assert output.startswith("Graph 0-0-dynamo has no output code.\n\nno kernels: compile failed: backend "
                                     "broken_backend raised\n  BackendCompilerFailed: backend='broken_backend' raised:")

    asyncio.run(run())


def test_a_restart_that_is_not_a_graph_break_is_said_in_the_job_view(tmp_path):
    """Dynamo restarts a frame at each graph break (said as the break), and for other reasons (said as a restart)."""
    trace = _trace("aot_eager_cpu", tmp_path / "t")
    text = (trace / LOG).read_text()
    at = text.index('"compile_id": "0/1"')  # the recompile of f: its restart given another reason
    head, tail = text[:at], text[at:]
    tail = re.sub(r'"restart_reasons": \["[^"]*(?:\\.[^"]*)*"\]',
                  '"restart_reasons": ["Speculation failed\\\\n  Explanation: a side effect inside a torch.cond branch"]',
                  tail, count=1)
    (trace / LOG).write_text(head + tail)
    assert _open(trace, tmp_path / "b").returncode == 0
    job = kernelscope_cmd("show", str(tmp_path / "b"), "--job").stdout
    compile_01 = job[job.index("compile 0/1"):job.index("compile 2/0")]
    assert "    restarted because         a side effect inside a torch.cond branch\n" in compile_01
    assert "restarted because" not in job.replace(compile_01, "")  # 0/0's restart was its graph break


def test_a_folder_of_logs_none_of_which_is_a_trace_is_one_line_naming_them(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "another.log").write_text("")
    (tmp_path / "t" / "stdout.log").write_text("step 1 loss 0.25\n")
    proc = _open(tmp_path / "t", tmp_path / "b")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "found no TORCH_TRACE records (another.log: empty, stdout.log: no TORCH_TRACE record in its first 200 " \
           "lines); point at the folder TORCH_TRACE named" in proc.stderr


def test_ranks_named_only_in_the_records_open_as_ranks(tmp_path):
    trace = _ddp(tmp_path / "t")
    for log in sorted(trace.glob("*.log")):  # logs renamed: the records' "rank" tells them apart
        log.rename(trace / f"worker_{log.name[-5]}.log")
    proc = _open(trace, tmp_path / "b")
    assert proc.returncode == 0 and "(2 ranks): 3 compile ids, 5 graphs, 17 kernels" in proc.stderr, proc.stderr
    assert read_bundle(tmp_path / "b").environment["ranks"] == [0, 1]


def test_a_folder_of_compressed_logs_says_to_decompress_them(tmp_path):
    folder = tmp_path / "trace"
    folder.mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "traces" / "aot_eager_cpu" / "dedicated_log_torch_trace.log.gz", folder)
    proc = kernelscope_cmd("open", str(folder), "--no-ui", "-o", str(tmp_path / "b"))
    assert proc.returncode == 2 and not (tmp_path / "b").exists()
    assert proc.stderr == (f"kernelscope: {folder}: its TORCH_TRACE logs are compressed "
                           f"(dedicated_log_torch_trace.log.gz); decompress them first: gunzip {folder}/*.log.gz\n")
