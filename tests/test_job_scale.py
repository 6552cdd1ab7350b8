"""A whole job at any size: `kernelscope open` streams a job-sized trace frame by frame (the same bundle
as building the whole log at once, in bounded memory, on every core), and the bundle reads as a job:
`show` summarises per graph first, the kernel list groups graphs and `/` finds a kernel in any of them.

The job is the H200 GPT-2 training trace (tests/fixtures/gpu_train_gpt2) repeated the way a long job
accumulates compiled frames (tests/job_trace.py), built here, never committed."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle, save_manifest
from kernelscope.bundle.kernel_rows import kernel_entries
from kernelscope.bundle.model import Bundle
from kernelscope.ingest.build import RawCapture, build_bundle
from kernelscope.ingest.open_trace import bundle_from_trace
from kernelscope.ingest.stream import build_frames, spool_trace
from kernelscope.ingest.tracelog import parse_spool_text, parse_trace_file, parse_trace_folder
from kernelscope.report.why import fusion_data
from tests.conftest import REPO, kernelscope_cmd
from tests.job_trace import scale_trace

TRAIN = REPO / "tests" / "fixtures" / "gpu_train_gpt2"


@pytest.fixture(scope="module")
def train_trace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("train-trace")
    (folder / "torch_trace.log").write_bytes(gzip.decompress((TRAIN / "trace.log.gz").read_bytes()))
    return folder


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> tuple[Path, Path]:
    """A 16-copy job (32 compiled frames, 64 graphs) and its bundle, opened by the CLI."""
    root = tmp_path_factory.mktemp("job")
    trace = scale_trace(TRAIN / "trace.log.gz", root / "job.log", 16)
    proc = kernelscope_cmd("open", str(trace), "--no-ui", "-o", str(root / "bundle"))
    assert proc.returncode == 0, proc.stderr
    return trace, root / "bundle"


def _facts(b: Bundle) -> list[tuple]:
    return [(k.graph, k.name, k.kind, k.launches, k.bytes_read, k.bytes_written, sorted(k.fx_nodes),
             [(Path(u.file).name, u.line) for u in k.library_lines]) for k in b.kernels]


def _job_copy(bundle: Path, tmp_path: Path) -> Path:
    """A copy of ``bundle`` a test may change."""
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    return copy


def test_streamed_open_is_the_bundle_the_whole_log_build_gives(train_trace, tmp_path):
    streamed = bundle_from_trace(train_trace, tmp_path / "streamed")
    whole = build_bundle(tmp_path / "whole", RawCapture(traces=[t for _, t in parse_trace_folder(train_trace)]),
                         Bundle(target={"spec": "x"}))
    assert [g.id for g in streamed.graphs] == [g.id for g in whole.graphs]
    assert len(streamed.kernels) == len(whole.kernels) == 60
    reread = read_bundle(tmp_path / "streamed")
    assert _facts(reread) == _facts(whole)
    assert [(gb.file, gb.line, gb.reason) for gb in reread.graph_breaks] == \
        [(gb.file, gb.line, gb.reason) for gb in whole.graph_breaks]
    # The guards and symbols of each graph are in its detail file, read when asked for.
    assert [len(g.guards) for g in reread.graphs] == [len(g.guards) for g in whole.graphs]
    assert sum(len(g.guards) for g in reread.graphs) > 0


def test_a_spool_reads_back_to_the_records_of_the_log_it_came_from(train_trace, tmp_path):
    spooled = spool_trace([(train_trace / "torch_trace.log", None)], tmp_path)
    assert len(spooled.frames) >= 4 and spooled.malformed == 0
    for path in spooled.frames.values():
        by_lines, by_records = parse_trace_file(path), parse_spool_text(path.read_text())
        assert [(r.kind, r.payload) for r in by_lines.records] == [(r.kind, r.payload) for r in by_records.records]
        assert by_lines.chromium_events == by_records.chromium_events


@pytest.mark.slow  # builds a 60-frame job twice, the second time on two workers (seconds)
def test_frames_built_on_two_cores_give_the_same_index_as_one(job, tmp_path):
    trace, _ = job
    (tmp_path / "spool").mkdir()
    spooled = spool_trace([(trace, None)], tmp_path / "spool")
    from kernelscope.ingest.stream import FrameJob

    def jobs(staging: Path) -> list[FrameJob]:
        staging.mkdir()
        return [FrameJob(spool=str(p), staging=str(staging), strings=spooled.strings, rank=rank, rank_prefix=False,
                         name_counts=spooled.name_counts, cache_entries=[], best_configs=[], stderr_text="")
                for (rank, _), p in spooled.frames.items()]

    one = build_frames(jobs(tmp_path / "one"), workers=1)
    two = build_frames(jobs(tmp_path / "two"), workers=2)
    assert [p["kernels"] for p in one] == [p["kernels"] for p in two]
    assert sum(len(p["kernels"]) for p in one) == 16 * 60


@pytest.mark.slow  # writes a 110 MB trace and opens it in a child (seconds)
def test_open_of_a_trace_larger_than_its_address_space_limit(tmp_path):
    """Memory follows the largest compiled frame, not the trace: a 110 MB trace opens in 96 MB of address space."""
    trace = scale_trace(TRAIN / "trace.log.gz", tmp_path / "big.log", 32)
    limit = 96 << 20
    assert trace.stat().st_size > limit

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, PYTHONPATH=str(REPO), MALLOC_ARENA_MAX="2")
    proc = subprocess.run([sys.executable, "-m", "kernelscope", "open", str(trace), "--no-ui", "-o",
                           str(tmp_path / "bundle")], preexec_fn=cap, capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "64 compile ids, 128 graphs, 1920 kernels" in proc.stderr
    assert len(read_bundle(tmp_path / "bundle").kernels) == 32 * 60


def test_show_of_a_job_summarises_per_graph_and_lists_every_kernel_on_request(job):
    _, bundle = job
    proc = kernelscope_cmd("show", str(bundle))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "job: 32 compiled frames, 64 graphs (32 forward, 32 backward), 960 kernels" in out
    assert "1-0-1-forward   forward        22       25    60.6 MB  forward at modeling_gpt2.py:647" in out
    assert "kernels moving the most bytes (10 of 960" in out
    assert out.count("triton_") < 40  # a summary, not a page per kernel
    every = kernelscope_cmd("show", str(bundle), "--all").stdout
    assert every.count("\n  ") > 960 and "76-0-1-backward" in every


def test_the_index_holds_the_job_and_each_graph_keeps_its_own_pairs(job):
    _, bundle = job
    import json

    index = json.loads((bundle / "bundle.json").read_text())
    assert index["version"] == 5 and index["kernel_count"] == 960 and "kernels" not in index
    assert index["kernel_fields"][:3] == ["id", "graph", "name"] and "kernel_ids" not in index["graphs"][0]
    assert index["graphs"][0]["kernel_rows"]["count"] == 22 and index["graphs"][1]["kernel_rows"]["first"] == 22
    assert len(kernel_entries(index, bundle)) == 960
    assert all("fx_nodes" in k and isinstance(k["fx_nodes"], int) for k in kernel_entries(index, bundle))
    b = read_bundle(bundle)
    assert not any(g.detail_loaded for g in b.graphs)  # nothing of a graph's detail is read to list the job
    first = b.graphs[0]
    assert first.guards is not None and first.detail_loaded and not b.graphs[-1].detail_loaded


def test_the_kernel_list_groups_a_jobs_graphs_and_slash_finds_a_kernel_in_any_of_them(job):
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import GRAPH_ROW, KernelTable

    _, bundle = job
    last_graph = read_bundle(bundle).graphs[-1]
    wanted = next(k for k in read_bundle(bundle).kernels if k.graph == last_graph.id and k.lang == "triton")

    async def run() -> None:
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            table = screen.query_one(KernelTable)
            labels = [table.get_row_at(i)[1].plain for i in range(table.row_count)]
            assert table.scroll_y == 0 and table.cursor_row == 1  # the first graph's row in view, above its kernel
            # The first graph unfolded, every other one a folded row with its count.
            assert labels[0] in ("▾ forward graph 1/0_1 · 22 kernels", "▾ forward 1/0_1 · 22"), labels[0]
            assert sum(1 for x in labels if x.startswith("▸ ")) == 63
            assert table.row_count == 64 + 22
            # Enter on a folded graph's row unfolds it; enter again folds it.
            row = next(i for i, key in enumerate(table._row_ids) if key == GRAPH_ROW + "3-0-forward")
            table.move_cursor(row=row)
            await pilot.press("enter")
            await pilot.pause()
            assert table.row_count == 64 + 22 + 3
            assert table.get_row_at(row)[1].plain.startswith("▾ forward 3/0 · 3")
            await pilot.press("enter")
            await pilot.pause()
            assert table.row_count == 64 + 22
            table.focus()
            # Every copy of the job defines the same kernels: the first match is in the first backward graph
            # (folded, so unfolded now), the previous one (wrapping) in the last graph of the job.
            await pilot.press("slash", *wanted.name[-30:], "enter")
            await pilot.pause()
            assert screen.kernel is not None and screen.kernel.name == wanted.name, screen.kernel
            assert screen.kernel.graph == "1-0-1-backward"
            assert table.row_count > 64 + 22  # its graph unfolded
            await pilot.press("N")
            await pilot.pause()
            assert screen.kernel.name == wanted.name and screen.kernel.graph == last_graph.id, screen.kernel.graph

    asyncio.run(run())


def _explore(bundle: Path, steps) -> None:
    """``steps(pilot, app)`` on the bundle's explorer at 160x48, once it is drawn."""
    from kernelscope.ui.app import make_app

    async def run() -> None:
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def test_a_step_on_a_graphs_row_goes_to_that_graphs_first_or_last_kernel(job):
    """, and . on a graph's row (no kernel selected) went to the ends of the whole job."""
    from kernelscope.ui.widgets.kernel_table import GRAPH_ROW, KernelTable

    async def steps(pilot, app) -> None:
        screen = app.screen
        table = screen.query_one(KernelTable)
        table.focus()
        row = next(i for i, key in enumerate(table._row_ids) if key == GRAPH_ROW + "3-0-forward")
        for key, end in (("full_stop", 0), ("comma", -1)):
            table.move_cursor(row=row)
            await pilot.pause()
            assert screen.kernel is None and screen.graph.id == "3-0-forward"
            mine = [k for k in screen.index.kernels_in_order() if k.graph == "3-0-forward"]
            await pilot.press(key)
            await pilot.pause()
            assert screen.kernel is mine[end], (key, screen.kernel and screen.kernel.id)

    _explore(job[1], steps)


def test_p_on_a_job_opens_at_once_and_counts_its_graphs_behind_the_screen(job, monkeypatch):
    """The presentation's counts read every graph's FX files (a 1,000-graph job: tens of seconds, the UI
    frozen): the screen opens saying it counts, and shows the counts when they are in."""
    import time

    from kernelscope.ui.story import story
    from kernelscope.ui.widgets import presentation
    from kernelscope.ui.widgets.presentation import PresentationScreen

    _, bundle = job
    expected = story(read_bundle(bundle)).counts_line()

    def slow_story(b):  # a job of many graphs, as slow to count as a 1,000-graph one
        time.sleep(1.5)
        return story(b)

    monkeypatch.setattr(presentation, "story", slow_story)

    async def steps(pilot, app) -> None:
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PresentationScreen)
        text = lambda: str(app.screen.query_one("#pres-counts").render())  # noqa: E731
        seen = [text()]
        for _ in range(300):
            if not seen[-1].startswith("counting"):
                break
            await pilot.pause(0.1)
            seen.append(text())
        assert seen[0] == "counting kernels and transfers in 64 graphs…", seen[0]  # ~0.7 s of reading
        assert seen[-1].startswith(expected), seen[-1]
        await pilot.press("escape")
        await pilot.pause()

    _explore(bundle, steps)


def test_a_jobs_first_frame_builds_the_rows_it_can_show_and_the_rest_before_the_first_key(job):
    """The kernel list and the breaks pane of a long job fill what the first frame can show; every row is
    there once it is drawn: the counts on the group rows, the last graph's row, `/` into the last graph."""
    from textual.widgets import OptionList

    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import GRAPH_ROW, KernelTable

    _, bundle = job
    b = read_bundle(bundle)
    last_graph = b.graphs[-1]
    n_last = sum(1 for k in b.kernels if k.graph == last_graph.id)
    wanted = next(k for k in b.kernels if k.graph == last_graph.id and k.lang == "triton")
    n_breaks = len(b.graph_breaks) + len(b.recompiles) + sum(1 for r in b.recompiles if r.guard)
    assert len(b.graphs) + 22 > 60 and n_breaks > 30  # longer than a 160x48 frame shows of either

    async def run() -> None:
        app = make_app(str(bundle))
        at_first: dict[str, int] = {}

        def first_frame() -> None:
            at_first["rows"] = app.screen.query_one(KernelTable).row_count
            at_first["breaks"] = app.screen.query_one("#breaks", OptionList).option_count

        app.after_first_frame(first_frame)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            table = screen.query_one(KernelTable)
            assert 48 <= at_first["rows"] < len(b.graphs) + 22, at_first
            assert 16 <= at_first["breaks"] < n_breaks, at_first
            assert table.row_count == len(b.graphs) + 22
            assert screen.query_one("#breaks", OptionList).option_count == n_breaks
            row = table._row_ids.index(GRAPH_ROW + last_graph.id)
            assert table.get_row_at(row)[1].plain.endswith(f" · {n_last}"), table.get_row_at(row)[1].plain
            await pilot.press("G")  # the last row: a kernel list built whole, not the first frame's rows
            await pilot.pause()
            assert table.cursor_row == table.row_count - 1
            await pilot.press("g", "slash", *wanted.name[-30:], "enter")
            await pilot.press("N")  # from the first match back, wrapping: the last graph's
            await pilot.pause()
            assert screen.kernel is not None and screen.kernel.name == wanted.name
            assert screen.kernel.graph == last_graph.id, screen.kernel.graph

    asyncio.run(run())


def test_the_info_pane_of_a_job_reads_the_selected_graph_only(job):
    from kernelscope.ui.summary import capture_info, graph_info, kernel_info, why_info

    _, bundle = job
    b = read_bundle(bundle)
    k = b.kernels[0]
    text = kernel_info(b, k) + graph_info(b, b.graphs[0]) + capture_info(b) + why_info(b, k, b.graphs[0])
    assert "each graph's shapes and guards: under the selected kernel" in text
    assert f"── shapes and guards of graph {k.graph} ──" in text
    loaded = [g.id for g in b.graphs if g.detail_loaded]
    assert loaded == [k.graph], loaded
    assert fusion_data(b)["pair_count"] >= 0  # the whole job's, when asked for (show --fusion)


def test_a_format_2_bundle_written_again_keeps_its_detail(job, tmp_path):
    import shutil

    _, bundle = job
    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    b = read_bundle(copy)
    b.notes.append("reviewed")
    save_manifest(b, copy)  # graphs never read stay as they were on disk
    again = read_bundle(copy)
    assert "reviewed" in again.notes
    assert _facts(again) == _facts(read_bundle(bundle))


def test_the_manifest_is_walked_for_control_characters_whenever_its_text_may_hold_one():
    """read_bundle skips the walk that strips escapes only where the JSON text cannot decode to a control
    character: every character that the walk would strip is seen in the text, escaped or raw."""
    import json

    from kernelscope.bundle.paths import _may_hold_controls
    from kernelscope.textsafe import CONTROLS

    for code in range(0x250):
        ch = chr(code)
        for ascii_only in (True, False):
            raw = json.dumps({"name": f"k{ch}k"}, ensure_ascii=ascii_only).encode()
            if CONTROLS.search(ch):
                assert _may_hold_controls(raw), (hex(code), ascii_only)
    assert not _may_hold_controls(json.dumps({"a": "tab\t newline\n quote\" Ω"}).encode())


def test_report_of_a_job_summarises_per_graph_and_lists_every_kernel_with_all(job, tmp_path):
    _, bundle = job
    md = kernelscope_cmd("report", str(bundle), "--format", "md").stdout
    assert "### The job, per graph" in md and "job: 32 compiled frames, 64 graphs" in md
    assert "### Kernels: the 40 moving the most bytes of 960" in md
    table = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
    assert len(table) == 40
    every = kernelscope_cmd("report", str(bundle), "--format", "md", "--all").stdout
    assert "### Kernels\n" in every and "### The job, per graph" not in every
    assert len([line for line in every.splitlines() if line.startswith("| ") and "`" in line]) == 960
    data = json.loads(kernelscope_cmd("report", str(bundle), "--format", "json").stdout)
    assert data["job"]["kernels"] == 960 and len(data["kernels"]) == 40
    # The kernels listed are those moving the most bytes, in that order.
    sizes = [(k["bytes_read"] or 0) + (k["bytes_written"] or 0) for k in data["kernels"]]
    assert sizes[0] >= sizes[-1]
    html = kernelscope_cmd("report", str(bundle), "--format", "html").stdout
    assert "The job, per graph" in html and "Kernels: the 40 moving the most bytes of 960" in html


def test_damaged_sections_are_left_out_with_a_note_and_nothing_downstream_fails(job, tmp_path):
    """compile_time, fusion and a graph's not-fused pairs shaped otherwise than kernelscope writes them
    (a string for a list, NaN for a time, a 400-digit count) are left out where they are read."""
    _, bundle = job
    copy = _job_copy(bundle, tmp_path)
    m = json.loads((copy / "bundle.json").read_text())
    side = copy / "sections" / "compile_time.json"
    compile_time = json.loads(side.read_text())
    compile_time["compiles"] = "x"
    side.write_text(json.dumps(compile_time))
    m["extra"]["fusion"] = ["not", "an", "object"]
    (copy / "bundle.json").write_text(json.dumps(m))
    detail_file = copy / m["graphs"][0]["detail"]
    detail = json.loads(detail_file.read_text())
    detail["graph"]["fusion_pairs"] = [{"graph": "g", "bytes": 10 ** 400}]
    detail_file.write_text(json.dumps(detail))
    b = read_bundle(copy)
    assert b.section("compile_time") is None and "fusion" not in b.extra
    notes = "\n".join(b.notes)
    assert "the compile-time record in sections/compile_time.json is damaged (compile_time.compiles is not a list)" in notes
    assert "the not-fused pairs' record in bundle.json is damaged (fusion is not an object)" in notes
    for args in (["show", str(copy), "--compile"], ["show", str(copy), "--fusion"], ["show", str(copy), "--job"],
                 ["report", str(copy), "--format", "md", "--all"], ["export", str(copy), "--trace", str(tmp_path / "t.json")]):
        proc = kernelscope_cmd(*args)
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
        if args[2] == "--compile":  # the view that reads the side file says what it found there
            assert "note: the compile-time record in sections/compile_time.json is damaged" in proc.stdout, proc.stdout
    b = read_bundle(copy)
    assert b.graphs[0].fusion_pairs == [] and any("401-digit number, past any count kernelscope writes; that graph's not-fused pairs are left out" in n for n in b.notes)


def _as_format_4(m: dict, bundle: Path) -> dict:
    """A format-5 index written back as format 4 wrote it: the kernels' rows in the manifest."""
    m["kernels"] = [json.loads(line) for line in (bundle / "kernel_index.jsonl").read_text().splitlines()]
    m["version"] = 4
    del m["kernel_count"]
    for g in m["graphs"]:
        del g["kernel_rows"]
    return m


def _as_objects(m: dict) -> dict:
    """A format-4 index written back as format 3 wrote it: each kernel an object."""
    m["kernels"], m["version"] = kernel_entries(m), 3
    del m["kernel_fields"]
    return m


def _field(m: dict, name: str) -> int:
    return m["kernel_fields"].index(name)


@pytest.mark.parametrize("change, words", [
    # format 4: rows of values under kernel_fields
    (lambda m: m["kernels"][0].__setitem__(_field(m, "name"), 5), "bundle.kernels[0].name"),
    (lambda m: m["kernels"][3].__setitem__(_field(m, "name"), None), "bundle.kernels[3].name"),
    (lambda m: m["kernels"][2].pop(), "bundle.kernels[2] has 14 values; bundle.kernel_fields names 15"),
    (lambda m: m["kernels"].__setitem__(1, "k"), "bundle.kernels[1] should be a list of 15 values"),
    (lambda m: m["kernels"][4].__setitem__(_field(m, "launches"), "1"), "bundle.kernels[4].launches"),
    (lambda m: m["kernels"][5].__setitem__(_field(m, "user_lines"), [True]), "bundle.kernels[5].user_lines"),
    (lambda m: m["kernels"][6].__setitem__(_field(m, "user_lines"), [len(m["lines"])]),
     "bundle.kernels[6].user_lines names a line the bundle's lines table does not have"),
    (lambda m: m["kernels"][7].__setitem__(_field(m, "user_lines"), [-1]), "bundle.kernels[7].user_lines names a line"),
    (lambda m: m["kernel_fields"].__setitem__(_field(m, "name"), "nom"), "bundle.kernels[0] has no name"),
    (lambda m: m["kernel_fields"].__setitem__(1, "id"), "bundle.kernel_fields should be a list of distinct field names"),
    (lambda m: m["kernels"][3].__setitem__(_field(m, "graph"), "nope"), "bundle.kernels[3] ("),
    (lambda m: m["kernels"][1].__setitem__(_field(m, "id"), m["kernels"][0][_field(m, "id")]), "appears twice"),
    # format 3 (the last release): each kernel an object
    (lambda m: _as_objects(m)["kernels"][0].__setitem__("name", 5), "bundle.kernels[0].name"),
    (lambda m: _as_objects(m)["kernels"][3].__setitem__("name", None), "bundle.kernels[3].name"),
    (lambda m: _as_objects(m)["kernels"][2].pop("name"), "bundle.kernels[2] has no name"),
    (lambda m: _as_objects(m)["kernels"].__setitem__(1, "k"), "bundle.kernels[1] should be an object"),
    (lambda m: _as_objects(m)["kernels"][4].__setitem__("launches", "1"), "bundle.kernels[4].launches"),
    (lambda m: _as_objects(m)["kernels"][5].__setitem__("user_lines", [True]), "bundle.kernels[5].user_lines"),
    (lambda m: _as_objects(m)["kernels"][6].__setitem__("user_lines", [len(m["lines"])]),
     "bundle.kernels[6].user_lines names a line the bundle's lines table does not have"),
])
def test_a_damaged_kernel_entry_of_a_jobs_index_is_named(job, tmp_path, change, words):
    """The index's kernel columns are type-checked all at once; the entry at fault is still the one named."""
    from kernelscope.bundle.model import BundleError

    _, bundle = job
    copy = tmp_path / "b"
    copy.mkdir()
    m = _as_format_4(json.loads((bundle / "bundle.json").read_text()), bundle)
    assert all(k.get("name") for k in kernel_entries(m)[:8])  # the cases above change a kernel that has them
    change(m)
    (copy / "bundle.json").write_text(json.dumps(m))
    with pytest.raises(BundleError) as err:
        read_bundle(copy)
    assert words in str(err.value), str(err.value)


def test_a_forged_bench_record_puts_no_impossible_time_in_the_kernel_list(job):
    """A bench record's times are checked where the list reads them: a time that is not a finite number of
    at most 1,000 s, or a row naming no kernel of the bundle, is no time; a graph some of whose kernels have
    no time says its sum is at least that."""
    from kernelscope.job_view import device_us_by_kernel
    from kernelscope.ui.widgets.kernel_cells import graph_time_cell

    _, bundle = job
    b = read_bundle(bundle)
    g = b.graphs[0]
    ks = [k for k in b.kernels if k.graph == g.id]
    b.extra["bench"] = {"run": {"per_kernel": [
        {"kernel_id": ks[0].id, "us": 1e300}, {"kernel_id": ks[1].id, "us": -5.0},
        {"kernel_id": ks[2].id, "us": 7.5}, {"kernel_id": ks[2].id, "us": True}, {"kernel_id": ks[2].id, "us": 2.5},
        {"kernel_id": "0-0-forward/not_in_this_bundle", "us": 3.0}, {"kernel_id": ks[3].id, "us": float("nan")}]}}
    times = device_us_by_kernel(b)
    assert times == {ks[2].id: 10.0}
    assert graph_time_cell(ks, times) == "≥10.0 µs"
    assert graph_time_cell(ks[2:3], times) == "10.0 µs" and graph_time_cell(ks[:2], times) == ""
    assert graph_time_cell(ks, {k.id: 600.0 for k in ks}) == f"{len(ks) * 0.6:.2f} ms"


@pytest.mark.parametrize("version", [3, 4])
def test_an_earlier_format_reads_as_its_format_5_copy(job, tmp_path, version):
    """Format 3 wrote each kernel as an object and each graph's kernel ids, format 4 their rows in the
    manifest; the same job written as format 5 (rows in kernel_index.jsonl, ids left to the order) reads back
    to the same kernels and graphs, and an earlier bundle saved again is written as format 5."""
    _, bundle = job
    old = tmp_path / "old"
    shutil.copytree(bundle, old)
    (old / "kernel_index.jsonl").unlink()
    m = _as_format_4(json.loads((bundle / "bundle.json").read_text()), bundle)
    if version == 3:
        m = _as_objects(m)
    new = read_bundle(bundle)
    for g, entry in zip(new.graphs, m["graphs"]):
        entry["kernel_ids"] = g.kernel_ids
    (old / "bundle.json").write_text(json.dumps(m))
    b = read_bundle(old)
    assert [g.kernel_ids for g in b.graphs] == [g.kernel_ids for g in new.graphs] and max(len(g.kernel_ids) for g in new.graphs) > 10
    figures = [(k.bytes_read, k.bytes_written, k.node_count, k.user_lines) for k in new.kernels]  # from the index
    assert not any(k.detail_loaded for k in new.kernels) and sum(f[0] or 0 for f in figures) > 1 << 20
    assert [(k.bytes_read, k.bytes_written, k.node_count, k.user_lines) for k in b.kernels] == figures
    assert _facts(b) == _facts(new)
    save_manifest(b, old)  # saved again (a bench record added, say): written as format 5
    again = json.loads((old / "bundle.json").read_text())
    assert again["version"] == 5 and "kernels" not in again and _facts(read_bundle(old)) == _facts(new)
    assert (old / "kernel_index.jsonl").read_bytes() == (bundle / "kernel_index.jsonl").read_bytes()


def test_report_json_is_strict_json(tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(REPO / "tests" / "fixtures" / "gpu" / "softmax_bench_cpu", copy)
    m = json.loads((copy / "bundle.json").read_text())
    m["extra"]["bench"]["run"]["compile_s"] = float("nan")  # json.dumps writes NaN; strict parsers refuse it
    (copy / "bundle.json").write_text(json.dumps(m))
    out = kernelscope_cmd("report", str(copy), "--format", "json").stdout
    assert "NaN" not in out
    json.loads(out, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))  # no NaN, Infinity


def test_a_bench_statistic_that_is_nan_is_saved_as_null(tmp_path):
    """A bench record can hold a NaN (a statistic over no values): the manifest stays strict JSON and the
    bundle saves (it raised 'Out of range float values are not JSON compliant' on the H100)."""
    copy = tmp_path / "b"
    shutil.copytree(REPO / "tests" / "fixtures" / "gpu" / "softmax_bench_cpu", copy)
    b = read_bundle(copy)
    b.extra["bench"]["run"]["compile_s"] = float("nan")
    b.extra["bench"]["run"]["seconds"] = float("inf")
    save_manifest(b, copy)
    text = (copy / "bundle.json").read_text()
    json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    again = read_bundle(copy).extra["bench"]["run"]
    assert again["compile_s"] is None and again["seconds"] is None


def test_a_jobs_long_texts_wait_in_side_files_until_asked_for(job, tmp_path):
    """Format 3: the graph breaks' whole messages and the compile-time rows (most of a job's index by size)
    live under sections/, read when a view asks; saving a bench record in place leaves them as they are."""
    _, bundle = job
    index = json.loads((bundle / "bundle.json").read_text())
    assert index["sections"] == ["graph_break_details", "compile_time"]
    assert "compile_time" not in index["extra"] and index["graph_breaks"]
    assert all("detail" not in gb for gb in index["graph_breaks"])
    b = read_bundle(bundle)
    assert b.section_unread("compile_time") and not b.graph_breaks[0].detail_loaded
    assert b.graph_breaks[0].reason and not b.graph_breaks[0].detail_loaded  # the list reads the index only
    assert b.graph_breaks[0].detail.startswith("Graph break")
    assert len(b.section("compile_time")["compiles"]) == 80 and not b.section_unread("compile_time")
    copy = _job_copy(bundle, tmp_path)
    before = (copy / "sections" / "compile_time.json").stat().st_mtime_ns
    b = read_bundle(copy)
    b.extra["bench"] = {"device": "cpu", "method": "test"}
    save_manifest(b, copy)
    assert (copy / "sections" / "compile_time.json").stat().st_mtime_ns == before  # never read: not rewritten
    again = read_bundle(copy)
    assert again.extra["bench"]["method"] == "test" and len(again.section("compile_time")["compiles"]) == 80
    assert again.graph_breaks[2].detail == read_bundle(bundle).graph_breaks[2].detail
    save_manifest(again, copy)  # read (by the Info pane, say), saved in place: still as it was on disk
    assert (copy / "sections" / "compile_time.json").stat().st_mtime_ns == before
    assert len(read_bundle(copy).section("compile_time")["compiles"]) == 80


def test_a_format_2_bundle_of_the_last_release_still_opens(job, tmp_path):
    """The last release wrote format 2: everything but the graphs' detail in bundle.json."""
    _, bundle = job
    old = tmp_path / "v2"
    shutil.copytree(bundle, old)
    index = _as_objects(_as_format_4(json.loads((old / "bundle.json").read_text()), old))
    (old / "kernel_index.jsonl").unlink()
    index["version"] = 2
    index["extra"]["compile_time"] = json.loads((old / "sections" / "compile_time.json").read_text())
    for gb, text in zip(index["graph_breaks"], json.loads((old / "sections" / "graph_break_details.json").read_text())):
        gb["detail"] = text
    del index["sections"]
    shutil.rmtree(old / "sections")
    (old / "bundle.json").write_text(json.dumps(index))
    b, new = read_bundle(old), read_bundle(bundle)
    assert _facts(b) == _facts(new)
    assert b.section("compile_time") == new.section("compile_time")
    assert [gb.detail for gb in b.graph_breaks] == [gb.detail for gb in new.graph_breaks]
    shown = kernelscope_cmd("show", str(old), "--compile")
    assert shown.returncode == 0 and shown.stdout == kernelscope_cmd("show", str(bundle), "--compile").stdout


def test_the_info_pane_shows_a_jobs_compile_time_once_its_side_file_is_read(job):
    """The first frame does not wait for a job's compile-time rows: the Info pane says it is reading them,
    then shows them (read in a worker thread)."""
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    _, bundle = job

    async def run() -> list[str]:
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                info = app.screen.query_one("#info", CodeView).text
                if "── where the compile went (trace) ──" in info:
                    break
            return info.splitlines()

    lines = asyncio.run(run())
    assert "── where the compile went (trace) ──" in lines and not any("reading…" in x for x in lines)
    assert any(x.startswith("Compile time: ") and "s in the trace's timed phases" in x for x in lines)
    # A job's Info pane shows the selected graph's compile, not every one of the job's 80 again per graph.
    section = lines[lines.index("── where the compile went (trace) ──"):]
    assert any("graph 1/0_1's compile and kernels below" in x for x in section), section
    assert [x.split(":")[0] for x in section if x.startswith("graph ")] == ["graph 1/0 forward (modeling_gpt2.py"]


@pytest.mark.parametrize("change, words, when", [
    # the manifest's row ranges: checked on opening
    (lambda m, f: m["graphs"][1]["kernel_rows"].__setitem__("first", 21),
     "bundle.graphs[1].kernel_rows starts at row 21, byte", "open"),
    (lambda m, f: m["graphs"][2]["kernel_rows"].__setitem__("offset", 5), "the graphs before it end at row", "open"),
    (lambda m, f: m["graphs"][0]["kernel_rows"].__setitem__("count", -1),
     "bundle.graphs[0].kernel_rows.count should be a whole number >= 0, not -1", "open"),
    (lambda m, f: m["graphs"][0]["kernel_rows"]["langs"].__setitem__("triton", 99),
     "bundle.graphs[0].kernel_rows.langs should count the graph's 22 kernels by language", "open"),
    (lambda m, f: m["graphs"][0]["kernel_rows"].__setitem__("moved", "1 GB"),
     "bundle.graphs[0].kernel_rows.moved should be a whole number of bytes or null", "open"),
    (lambda m, f: m.__setitem__("kernel_count", 961), "bundle.kernel_count is 961; the graphs' rows add up to 960", "open"),
    (lambda m, f: m["graphs"][0].pop("kernel_rows"), "bundle.graphs[0].kernel_rows should be an object", "open"),
    # a forged count or length: refused before anything is held for it
    (lambda m, f: (m["graphs"][-1]["kernel_rows"].__setitem__("count", 300_000_000),
                   m["graphs"][-1]["kernel_rows"]["langs"].__setitem__("triton", 300_000_000),
                   m["graphs"][-1]["kernel_rows"]["langs"].pop("extern", None)),
     "rows in", "open"),
    (lambda m, f: m["graphs"][-1]["kernel_rows"].__setitem__("length", 1 << 40),
     "more than kernelscope reads", "open"),
    (lambda m, f: f.write_text(f.read_text()[:-10]), "kernel_index.jsonl holds", "open"),
    (lambda m, f: f.unlink(), "kernel_index.jsonl: cannot read it", "open"),
    # the rows: checked when a graph's, or all, are read
    (lambda m, f: f.write_text(f.read_text().replace('"1-0-1-backward", "triton_', '"1-0-1-backwarX", "triton_', 1)),
     "row 27 names graph '1-0-1-backwarX' where the manifest puts graph '1-0-1-backward'", "kernels"),
    (lambda m, f: f.write_text("".join(r if i != 40 else "[" + " " * (len(r) - 3) + "]\n"
                                       for i, r in enumerate(f.read_text().splitlines(keepends=True)))),
     "kernels[", "kernels"),
    (lambda m, f: f.write_text("".join(r if i != 40 else "{" + " " * (len(r) - 3) + "}\n"
                                       for i, r in enumerate(f.read_text().splitlines(keepends=True)))),
     "should be a list of 15 values", "kernels"),
    # what a first frame shows of a graph not read yet: checked against its rows once they are read
    (lambda m, f: m["graphs"][-1]["kernel_rows"]["langs"].update(triton=15, extern=19),
     "the manifest says {'extern': 19, 'triton': 15} by language, its rows", "graph"),
    (lambda m, f: m["graphs"][3]["kernel_rows"].__setitem__("moved", 7),
     "the manifest says its kernels move 7 bytes per call, its rows", "kernels"),
])
def test_a_damaged_kernel_file_of_a_format_5_job_is_named(job, tmp_path, change, words, when):
    """Format 5's kernel file and the manifest's ranges into it: a damage is refused with one line that names
    it, on opening where the manifest alone shows it, else when the kernels are read (a graph's or all)."""
    from kernelscope.bundle.model import BundleError

    _, bundle = job
    copy = _job_copy(bundle, tmp_path)
    m = json.loads((copy / "bundle.json").read_text())
    change(m, copy / "kernel_index.jsonl")
    (copy / "bundle.json").write_text(json.dumps(m))
    if when == "open":
        with pytest.raises(BundleError) as err:
            read_bundle(copy)
    else:
        b = read_bundle(copy)
        with pytest.raises(BundleError) as err:
            b.kernels_of(b.graphs[-1].id) if when == "graph" else b.kernels  # noqa: B018
        assert b.kernels == [] and any("the kernel list is left empty" in n for n in b.notes)  # said once
        assert b.kernel_count() == 960 and sum(b.kernel_langs().values()) == 960  # the header counts on
    assert words in str(err.value), str(err.value)
    assert "\n" not in str(err.value) and "capture again" in str(err.value) or when == "open"


def test_a_symlinked_kernel_file_is_not_followed_out_of_the_bundle(job, tmp_path):
    from kernelscope.bundle.model import BundleError

    _, bundle = job
    copy = _job_copy(bundle, tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    (copy / "kernel_index.jsonl").rename(outside)
    (copy / "kernel_index.jsonl").symlink_to(outside)
    with pytest.raises(BundleError) as err:
        read_bundle(copy)
    assert "outside the bundle; refusing to read it" in str(err.value)


def test_a_format_5_job_reads_one_graphs_kernels_until_all_are_asked_for(job):
    """Opening a job reads its graphs, not its 960 kernels: the header counts them from the manifest, a
    graph's kernels are read with its own rows, the whole list when asked for, each kernel built once."""
    _, bundle = job
    b = read_bundle(bundle)
    assert not b.kernels_read and b.kernel_count() == 960
    from kernelscope.ui.summary import count_line

    whole = read_bundle(bundle)
    assert count_line(b) == count_line(whole) and not b.kernels_read
    whole.kernels  # noqa: B018
    assert count_line(b) == count_line(whole)
    third = b.kernels_of("3-0-forward")
    assert [k.name for k in third] == [k.name for k in whole.kernels_of("3-0-forward")] and not b.kernels_read
    assert b.graphs[5].kernel_ids == whole.graphs[5].kernel_ids and not b.kernels_read
    guards = b.graph("3-0-forward").guards  # a graph's detail, its kernels' too
    assert guards == whole.graph("3-0-forward").guards and third[0].fx_nodes == whole.kernels_of("3-0-forward")[0].fx_nodes
    assert not b.kernels_read
    everything = b.kernels
    assert [k.id for k in everything] == [k.id for k in whole.kernels] and b.kernels_read
    assert everything[everything.index(third[0])] is third[0]  # the one already read, not a copy
    from kernelscope.ui.xref import BundleIndex

    assert b.listed_in_launch_order() and BundleIndex(b).kernels_in_order() == everything  # no comparing
    b.kernels = everything[::-1]  # a list made in memory: compared again
    assert not b.listed_in_launch_order() and BundleIndex(b).kernels_in_order() == everything


def test_a_jobs_first_frame_lists_its_graphs_with_one_graphs_kernels_read(job):
    """The first frame of a format-5 job reads the first graph's kernels only (the group rows count what the
    manifest says); once it is drawn the whole list is read, and `/` reaches the last graph."""
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import GRAPH_ROW, KernelTable

    _, bundle = job
    whole = read_bundle(bundle)
    last, third = whole.graphs[-1], whole.graphs[2]
    wanted = next(k for k in whole.kernels if k.graph == last.id and k.lang == "triton")

    async def run() -> None:
        app = make_app(str(bundle))
        seen: dict = {}

        def first_frame() -> None:
            table = app.screen.query_one(KernelTable)
            seen["read"], seen["partial"], seen["known"] = app.screen.bundle.kernels_read, table.partial, len(table.kernels)
            seen["third"] = table.get_row_at(table._row_ids.index(GRAPH_ROW + third.id))[1].plain  # folded, unread
            seen["header"] = str(app.screen.query_one("#summary").render())

        app.after_first_frame(first_frame)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            table = app.screen.query_one(KernelTable)
            assert seen["read"] is False and seen["partial"] is True and seen["known"] == 22, seen
            assert " · 960 kernels (448 Triton, 512 extern)" in seen["header"], seen["header"]
            assert seen["third"] == f"▸ {third.kind} {third.compile_id} · {len(whole.kernels_of(third.id))}", seen
            await pilot.pause(0.2)
            assert app.screen.bundle.kernels_read and not table.partial and len(table.kernels) == 960
            row = table._row_ids.index(GRAPH_ROW + last.id)
            n_last = len(whole.kernels_of(last.id))
            assert table.get_row_at(row)[1].plain.endswith(f" · {n_last}")
            await pilot.press("slash", *wanted.name[-30:], "enter", "N")
            await pilot.pause()
            assert app.screen.kernel is not None and app.screen.kernel.graph == last.id

    asyncio.run(run())


@pytest.mark.parametrize("benched", [False, True])
def test_a_jobs_kernel_file_damaged_past_its_first_graph_is_said_and_the_ui_goes_on(job, tmp_path, benched):
    """The first graph's rows read, a later graph's damaged: the first frame draws, reading the rest says what
    is wrong in one line, and the list, the steps and `/` go on with what was read (after a bench too, the
    time column kept for the kernels read)."""
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import KernelTable

    _, bundle = job
    copy = (_benched_copy if benched else _job_copy)(bundle, tmp_path)
    rows = (copy / "kernel_index.jsonl").read_text().splitlines(keepends=True)
    rows[40] = "[" + " " * (len(rows[40]) - 3) + "]\n"  # graph 2's, its length kept
    (copy / "kernel_index.jsonl").write_text("".join(rows))

    async def run() -> None:
        app = make_app(str(copy))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause(0.3)
            said = [str(n.message) for n in app._notifications]
            assert any("kernel_index.jsonl: bundle.kernels[40] has 0 values" in m and "capture again" in m
                       for m in said), said
            table = app.screen.query_one(KernelTable)
            assert not table.partial and len(table.kernels) == 22
            if benched:
                first = next(iter(table.kernels))
                assert str(table.get_row(first)[-1]) == "2.0 µs" and len(table._times) == 22
            await pilot.press("full_stop", "full_stop", "comma", "slash", "t", "r", "i", "enter")
            await pilot.pause()
            assert app.screen.kernel is not None and app.screen.kernel.graph == "1-0-1-forward"

    asyncio.run(run())


def test_whether_a_format_5_bundle_is_a_job_is_known_without_reading_its_kernel_file(train_trace, tmp_path):
    """is_job (the explorer asks it before its first frame, the Info pane on every kernel) counts kernels from
    the manifest: a job of few graphs and many kernels is not read whole for it."""
    from kernelscope.job_summary import is_job

    bundle_from_trace(train_trace, tmp_path / "b")
    b = read_bundle(tmp_path / "b")
    assert is_job(b) is False and not b.kernels_read and b.kernel_count() == 60


def test_a_graphs_detail_with_its_rows_damaged_is_a_note_and_a_graph_read_before_keeps_its_kernels(job, tmp_path):
    """A graph whose rows are damaged: asking for its detail (symbols, guards) is a note, not a traceback,
    and a graph read before the failure still answers with its kernels."""
    copy = _job_copy(job[1], tmp_path)
    rows = (copy / "kernel_index.jsonl").read_text().splitlines(keepends=True)
    rows[40] = "[" + " " * (len(rows[40]) - 3) + "]\n"  # a later graph's, its length kept
    (copy / "kernel_index.jsonl").write_text("".join(rows))
    ranges = [g["kernel_rows"] for g in json.loads((copy / "bundle.json").read_text())["graphs"]]
    damaged = next(i for i, r in enumerate(ranges) if r["first"] <= 40 < r["first"] + r["count"])
    b = read_bundle(copy)
    first = b.kernels_of(b.graphs[0].id)
    assert len(first) == 22 and damaged > 0
    assert b.graphs[damaged].symbols is not None  # its rows fail as its detail loads: said, not raised
    assert any("the kernel list is left empty" in n for n in b.notes), b.notes
    assert b.kernels_of(b.graphs[0].id) == first and b.kernels_of(b.graphs[damaged].id) == []


def test_a_small_format_5_bundle_with_a_damaged_kernel_file_is_refused_as_it_opens(train_trace, tmp_path):
    """A bundle the explorer lists whole (4 graphs, 60 kernels) reads its kernel file as it opens: a damaged
    row is one line from `kernelscope BUNDLE`, as format 4's manifest was, never a traceback mid-draw."""
    from kernelscope.bundle.model import BundleError
    from kernelscope.ui.app import make_app

    out = tmp_path / "b"
    bundle_from_trace(train_trace, out)
    rows = (out / "kernel_index.jsonl").read_text().splitlines(keepends=True)
    rows[5] = rows[5].replace(", false, ", ', "no!", ', 1)  # a row's bytes_bound made a string, its length kept
    (out / "kernel_index.jsonl").write_text("".join(rows))
    with pytest.raises(BundleError) as err:
        make_app(str(out))
    assert "kernel_index.jsonl: bundle.kernels[5].bytes_bound should be true/false" in str(err.value)
    assert "capture again" in str(err.value)
    proc = kernelscope_cmd(str(out))
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_a_graphs_kernels_are_written_in_its_launch_order_and_an_empty_job_needs_no_kernel_file(job, tmp_path):
    _, bundle = job
    copy = _job_copy(bundle, tmp_path)
    b = read_bundle(copy)
    first = b.graphs[0]
    launch = [k.id for k in b.kernels_of(first.id)]
    b.kernels  # noqa: B018
    mine = [k for k in b.kernels if k.graph == first.id]
    rest = [k for k in b.kernels if k.graph != first.id]
    b.kernels = mine[::-1] + rest  # listed backwards, the graph's kernel ids still in launch order
    first.kernel_ids = launch
    save_manifest(b, copy)
    m = json.loads((copy / "bundle.json").read_text())
    assert "kernel_ids" not in m["graphs"][0]  # the file's order gives them
    again = read_bundle(copy)
    assert [k.id for k in again.kernels_of(first.id)] == launch and again.graphs[0].kernel_ids == launch
    empty = tmp_path / "e"
    empty.mkdir()
    e = read_bundle(copy)
    e.kernels = []
    save_manifest(e, empty)
    (empty / "kernel_index.jsonl").unlink()
    assert read_bundle(empty).kernels == [] and read_bundle(empty).kernel_count() == 0


def _time_every_kernel(b: Bundle) -> None:
    """A bench record giving each kernel of ``b`` 2 µs (a benched job, as the UI reads one)."""
    b.extra["bench"] = {"device": "cuda", "method": "test", "run": {"per_kernel": [
        {"kernel_id": k.id, "name": k.name, "us": 2.0} for k in b.kernels]}}


def _benched_copy(bundle: Path, tmp_path: Path, *more_rows: dict) -> Path:
    """A copy of ``bundle`` whose every kernel was benched at 2 µs (and ``more_rows`` in its record too)."""
    copy = _job_copy(bundle, tmp_path)
    b = read_bundle(copy)
    _time_every_kernel(b)
    b.extra["bench"]["run"]["per_kernel"] += more_rows
    save_manifest(b, copy)
    return copy


async def _line_times_worked_out(pilot, screen, tries: int = 100) -> None:
    """Pause until the explorer's device time per line is worked out (its thread) or ``tries`` pauses pass."""
    for _ in range(tries):
        await pilot.pause(0.1)
        if not screen.line_times_later:
            return


def test_a_benched_jobs_first_frame_leaves_the_device_time_per_line_to_a_thread(job, tmp_path):
    """A benched job's device time per line reads every graph's detail file (seconds at a thousand graphs):
    the first frame is drawn without it, then the Source and Info panes show it."""
    from kernelscope.report.lines import line_tables_ready
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    copy = _benched_copy(job[1], tmp_path)

    async def run() -> None:
        app = make_app(str(copy))
        seen: dict = {}

        def first_frame() -> None:
            seen["ready"] = line_tables_ready(app.screen.bundle)
            seen["loaded"] = sum(g.detail_loaded for g in app.screen.bundle.graphs)
            seen["info"] = "\n".join(app.screen.query_one("#info", CodeView).doc.lines)

        app.after_first_frame(first_frame)
        async with app.run_test(size=(160, 48)) as pilot:
            await _line_times_worked_out(pilot, app.screen)
            assert seen["ready"] is False and seen["loaded"] <= 2, seen
            assert "── device time per line: working it out from every graph's launches… ──" in seen["info"]
            assert line_tables_ready(app.screen.bundle) and not app.screen.line_times_later
            await pilot.pause(0.2)
            info = "\n".join(app.screen.query_one("#info", CodeView).doc.lines)
            assert "── device time per line ──" in info and "working it out" not in info

    asyncio.run(run())


def test_a_benched_jobs_first_frame_reads_one_graph_and_times_every_graph_row(job, tmp_path):
    """After a bench the list still starts knowing one graph's kernels: a folded graph's row sums the bench's
    rows that name it (no kernel file read for it). A row naming a kernel the graph does not have (a forged or
    stale record) is dropped once the graphs are read, and the row's sum is drawn again."""
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import GRAPH_ROW, KernelTable

    b = read_bundle(job[1])
    last = b.graphs[-1]
    n_last = sum(k.graph == last.id for k in b.kernels)
    copy = _benched_copy(job[1], tmp_path, {"kernel_id": f"{last.id}/triton_not_in_this_graph", "us": 1000.0})

    async def run() -> None:
        app = make_app(str(copy))
        seen: dict = {}

        def first_frame() -> None:
            table = app.screen.query_one(KernelTable)
            seen["read"] = app.screen.bundle.kernels_read
            seen["partial"] = table.partial
            seen["last"] = table._graph_time(last.id)

        app.after_first_frame(first_frame)
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.screen.query_one(KernelTable)
            for _ in range(150):  # the whole index is read once the first frame is drawn
                await pilot.pause(0.1)
                if not table.partial:
                    break
            assert seen["read"] is False and seen["partial"] is True, seen
            assert seen["last"] == f"{(2.0 * n_last + 1000.0) / 1000:.2f} ms", seen  # the forged row not known yet
            await pilot.pause(0.2)
            assert not table.partial
            row = table.get_row(GRAPH_ROW + last.id)
            assert str(row[-1]) == f"{2.0 * n_last:.1f} µs", row

    asyncio.run(run())


def test_line_times_that_cannot_be_worked_out_are_said_once_and_the_panes_go_on(job, tmp_path, monkeypatch):
    from kernelscope.report import lines
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    copy = _benched_copy(job[1], tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("a detail file the loader did not expect")

    monkeypatch.setattr(lines, "_line_tables", broken)

    async def run() -> None:
        app = make_app(str(copy))
        async with app.run_test(size=(160, 48)) as pilot:
            await _line_times_worked_out(pilot, app.screen, 50)
            said = [str(n.message) for n in app._notifications]
            assert "device time per line: a detail file the loader did not expect" in said, said
            info = "\n".join(app.screen.query_one("#info", CodeView).doc.lines)
            assert "working it out" not in info and "── device time per line ──" not in info
            assert lines.line_tables(app.screen.bundle) is None  # given up for this record, not tried again

    asyncio.run(run())


def test_a_bench_stored_in_a_jobs_explorer_works_out_its_line_times_in_the_thread(job, tmp_path):
    from kernelscope.report.lines import line_tables_ready
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    _, bundle = job

    async def run() -> None:
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert not screen.line_times_later
            _time_every_kernel(screen.bundle)
            screen.bench_changed(screen.bundle)
            assert screen.line_times_later and not line_tables_ready(screen.bundle)  # not on this thread
            info = "\n".join(screen.query_one("#info", CodeView).doc.lines)
            assert "working it out from every graph's launches" in info
            await _line_times_worked_out(pilot, screen)
            await pilot.pause(0.2)
            assert line_tables_ready(screen.bundle)
            assert "── device time per line ──" in "\n".join(screen.query_one("#info", CodeView).doc.lines)

    asyncio.run(run())


def test_a_detail_file_missing_a_required_field_is_a_note_not_a_crash(job, tmp_path):
    _, bundle = job
    copy = _job_copy(bundle, tmp_path)
    b = read_bundle(copy)
    g = b.graphs[5]
    path = copy / g.__dict__["_detail_path"]
    detail = json.loads(path.read_text())
    first = next(iter(detail["kernels"]))
    detail["kernels"][first]["launch_info"] = [{"user_lines": []}]  # no index
    path.write_text(json.dumps(detail))
    again = read_bundle(copy)
    assert again.graphs[5].guards == [] and again.kernels_of(g.id)[0].launch_info == []
    assert any("launch_info[0] has no index" in n and "not shown" in n for n in again.notes), again.notes
