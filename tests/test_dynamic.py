"""Dynamic shapes, guards and CUDA graphs: symbols with their per-call values, the guard list of each
graph, the failed guard behind a recompile, and whether a CUDA graph was recorded or skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.bundle.model import Bundle, Graph, Recompile
from kernelscope.bundle.symbolic import bytes_per_call, eval_dim
from kernelscope.ingest.guards import cudagraph_status, link_recompile, parse_cudagraph_log, parse_guard_tree
from kernelscope.ingest.open_trace import bundle_from_trace
from kernelscope.units import short_bytes
from tests.conftest import kernelscope_cmd

FIXTURES = Path(__file__).parent / "fixtures" / "dynamic"


# -- from real TORCH_TRACE logs (torch 2.13, CPU), trimmed to the records kernelscope reads -----------

@pytest.fixture(scope="module")
def opened(tmp_path_factory) -> dict[str, Bundle]:
    root = tmp_path_factory.mktemp("dyn")
    return {name: bundle_from_trace(FIXTURES / f"{name}.log", root / name)
            for name in ("dynamic_softmax", "recompile_add")}


def test_symbols_name_their_input_dimension_hint_and_narrowed_range(opened):
    g = opened["dynamic_softmax"].graphs[0]
    by_name = {s["name"]: s for s in g.symbols}
    assert by_name["s77"]["source"] == "L['x'].size()[0]" and by_name["s77"]["hint"] == 64
    assert by_name["s77"]["range"] == "[2, int_oo]"
    # create_symbol said [2, int_oo]; the guard "2 <= L['x'].size()[1] <= 4096" narrowed it
    assert by_name["s27"]["range"] == "[2, 4096]"
    assert by_name["s27"]["line"] == 4 and "x.amax" in by_name["s27"]["code"]


def test_guard_list_is_grouped_and_names_the_user_line(opened):
    g = opened["dynamic_softmax"].graphs[0]
    groups = {x["group"] for x in g.guards}
    assert {"tensor match", "shape", "global state"} <= groups
    tm = next(x for x in g.guards if x["kind"] == "TENSOR_MATCH")
    assert tm["source"] == "L['x']" and tm["line"] == 4 and tm["file"].endswith("run.py")
    assert any(x["text"] == "2 <= L['x'].size()[0]" for x in g.guards if x["group"] == "shape")


def test_recompile_links_to_the_failed_tensor_guard_with_both_values(opened):
    b = opened["recompile_add"]
    (r,) = b.recompiles
    assert r.guard["compile_id"] == "0/0" and r.guard["graph"] == "0-0-inference"
    assert r.guard["kind"] == "TENSOR_MATCH" and "size=[8]" in r.guard["text"]
    assert (r.guard["expected"], r.guard["actual"]) == ("8", "16")
    assert r.guard["line"] == 8 and r.guard["code"] == "return (x + 1).relu()"


def test_shape_guard_failure_links_to_that_guard():
    tree = ("TREE_GUARD_MANAGER:\n+- RootGuardManager\n"
            "+- LAMBDA_GUARD: L['x'].size()[0] <= 4096  # y = x.sum()  # /u/f.py:12 in fn\n")
    guards = parse_guard_tree(tree, "/u/f.py")
    r = Recompile(compile_id="0/1", reason="0/0: L['x'].size()[0] <= 4096")
    link_recompile(r, {"0/0": guards}, {"0/0": "0-0-forward"})
    assert r.guard["group"] == "shape" and r.guard["line"] == 12 and r.guard["file"] == "/u/f.py"


def test_symbolic_sizes_evaluate():
    values = {"s0": 64, "s1": 1024}
    assert eval_dim("s0*s1", values) == 65536
    assert eval_dim("(s0 + 3)//4", values) == 16
    assert eval_dim("s9", values) is None
    assert eval_dim("__import__('os')", values) is None


# -- CUDA graphs: Inductor's log lines (formats from torch/_inductor/cudagraph_utils.py, cudagraph_trees.py)

SKIP_LOG = """\
W1130 10:00:01.000000 123 torch/_inductor/cudagraph_utils.py:380] [0/0] [__cudagraphs] skipping cudagraphs due to cpu device (arg1_1). Found from :
   File "/u/model.py", line 9, in forward
    return x + self.cpu_buf
I1130 10:00:02.000000 123 torch/_inductor/cudagraph_trees.py:443] [1/0] Recording cudagraph tree for graph without symints
"""


def test_cudagraph_skip_reason_and_recording_from_logs():
    log = parse_cudagraph_log(SKIP_LOG)
    assert log["0/0"] == {"status": "skipped", "reason": "cpu device (arg1_1)"}
    assert log["1/0"]["status"] == "recorded"
    b = Bundle(options={"mode": "reduce-overhead", "device": "cuda"},
               graphs=[Graph(id="0-0-forward", compile_id="0/0", kind="forward"),
                       Graph(id="1-0-forward", compile_id="1/0", kind="forward"),
                       Graph(id="2-0-forward", compile_id="2/0", kind="forward")])
    cudagraph_status(b, log, {"2/0": "skipping cudagraphs due to mutated inputs (1 instances)"})
    assert [g.cudagraphs["status"] for g in b.graphs] == ["skipped", "recorded", "skipped"]
    assert b.graphs[2].cudagraphs["reason"] == "mutated inputs (1 instances)"


def test_default_mode_says_cuda_graphs_do_not_apply(opened):
    assert opened["recompile_add"].graphs[0].cudagraphs["status"] == "n/a"


def test_old_bundles_without_the_new_fields_still_load(tmp_path, opened):
    src = Path(opened["recompile_add"].root)
    data = json.loads((src / "bundle.json").read_text())
    for g in data["graphs"]:
        g.pop("cudagraphs")
        # Format 2 keeps a graph's symbols, calls and guards in its detail file: gone from there too.
        detail_file = src / g["detail"]
        detail = json.loads(detail_file.read_text())
        for key in ("symbols", "calls", "guards"):
            detail["graph"].pop(key)
        detail_file.write_text(json.dumps(detail))
    for r in data["recompiles"]:
        r.pop("guard")
    (src / "bundle.json").write_text(json.dumps(data))
    b = read_bundle(src)
    assert b.graphs[0].guards == [] and b.recompiles[0].guard == {}


# -- real captures --------------------------------------------------------------------------------

@pytest.mark.slow
def test_dynamic_capture_shows_symbols_and_per_call_sizes_and_bytes(cpu_dynamic_softmax):
    proc = kernelscope_cmd("show", str(cpu_dynamic_softmax))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "L['x'].size()[0]" in out and "hint 64" in out
    assert "read ?" not in out
    for rows, size in ((64, "262.1 KB"), (128, "524.3 KB"), (256, "1.0 MB")):  # decimal SI units
        assert f"[{rows}, 1024]" in out and f"read {size}" in out
    data = json.loads(kernelscope_cmd("show", str(cpu_dynamic_softmax), "--json").stdout)
    (k,) = [k for k in data["kernels"] if k["lang"] != "extern"]
    assert [c["read"] for c in k["bytes_per_call"]] == [64 * 1024 * 4, 128 * 1024 * 4, 256 * 1024 * 4]
    groups = {x["group"] for x in data["graphs"][0]["guards"]}
    assert {"tensor match", "shape"} <= groups


@pytest.mark.slow
def test_recompile_shows_the_failed_guard_and_both_values(cpu_recompile_softmax):
    out = kernelscope_cmd("show", str(cpu_recompile_softmax)).stdout
    assert "failed guard of 0/0 (tensor match, TENSOR_MATCH) at softmax.py:7" in out
    assert "expected 8, actual 16" in out
    md = kernelscope_cmd("report", str(cpu_recompile_softmax), "--format", "md").stdout
    assert "### Guards" in md and "expected 8, actual 16" in md


@pytest.mark.slow
def test_explorer_recompile_row_leads_to_its_failed_guard_line(cpu_recompile_softmax, tmp_path, monkeypatch):
    import asyncio

    from kernelscope.ui.app import make_app

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))

    async def run():
        app = make_app(str(cpu_recompile_softmax))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("6")  # the breaks pane
            await pilot.pause()
            breaks = app.screen.query_one("#breaks")
            prompts = [str(breaks.get_option_at_index(i).prompt) for i in range(breaks.option_count)]
            row = next(i for i, p in enumerate(prompts) if "failed tensor match guard of 0/0" in p)
            assert "softmax.py:7" in prompts[row] and "expected 8, actual 16" in prompts[row]
            breaks.highlighted = row
            await pilot.press("enter")
            await pilot.pause()
            source = app.screen.query_one("#source")
            assert source.doc.lines[source.cursor].strip() == "return torch.softmax(x, dim=-1)"
            assert source.cursor in source.marks

    asyncio.run(run())


def test_explorer_shows_a_symbolic_kernels_bytes_per_call(cpu_dynamic_softmax, tmp_path, monkeypatch):
    """The kernels list gives a symbolic kernel the range of what it moved over the capture's calls
    (never '?'), and the Info pane says its bytes are per call and lists them."""
    import asyncio

    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.kernel_table import KernelTable

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    bundle = read_bundle(cpu_dynamic_softmax)
    (k,) = [k for k in bundle.kernels if k.lang != "extern"]
    moved = [c["read"] + c["written"] for c in bytes_per_call(k, bundle.graphs[0])]
    assert len(set(moved)) == 3

    async def run():
        app = make_app(str(cpu_dynamic_softmax))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            table = app.screen.query_one(KernelTable)
            cell = str(table.get_row(k.id)[4])
            assert cell == f"{short_bytes(min(moved))}–{short_bytes(max(moved))}"
            await pilot.press("7")  # Info
            await pilot.pause()
            info = "\n".join(app.screen.query_one("#info").doc.lines)
            assert "symbolic sizes: bytes per call below" in info and "read ?" not in info
            assert "call 3 (" in info

    asyncio.run(run())
