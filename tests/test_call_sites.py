"""Where each compile came from: the innermost line of the user's code on the stack that reached the
compiled frame (the H200 GPT-2 training script's `loss = step_fn(...)`, not transformers' decorator nor
torch's `_call_impl`), in `show`, `show --stacks`, a job's summary, the report and the Info pane."""

from __future__ import annotations

import gzip

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.ingest.build import call_site
from kernelscope.ingest.open_trace import bundle_from_trace
from tests.conftest import REPO, kernelscope_cmd
from tests.job_trace import scale_trace

TRAIN = REPO / "tests" / "fixtures" / "gpu_train_gpt2"
SITE = "train_gpt2.py:14  loss = step_fn(input_ids=ids, labels=ids).loss"


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    root = tmp_path_factory.mktemp("sites")
    (root / "trace").mkdir()
    (root / "trace" / "t.log").write_bytes(gzip.decompress((TRAIN / "trace.log.gz").read_bytes()))
    bundle_from_trace(root / "trace", root / "bundle")
    return root / "bundle"


def test_each_graph_names_the_scripts_line_that_compiled_it(train):
    b = read_bundle(train)
    assert [g.compiled_from() for g in b.graphs] == [SITE] * 4
    assert all(g.called_elsewhere() for g in b.graphs)
    out = kernelscope_cmd("show", str(train)).stdout
    assert out.count(f"compiled from {SITE}") == 4


def test_show_stacks_prints_the_whole_stack_with_the_line_marked(train):
    out = kernelscope_cmd("show", str(train), "--stacks").stdout
    assert "compile 1/0_1 (1-0-1-forward): forward at modeling_gpt2.py:647" in out
    assert "  ▶ train_gpt2.py:14 in <module>  loss = step_fn(input_ids=ids, labels=ids).loss" in out
    assert "module.py:1790 in _call_impl [torch]" in out and "modeling_gpt2.py:647 in forward [library]" in out


def test_the_report_and_the_info_pane_say_where_the_compiles_came_from(train):
    from kernelscope.ui.summary import graph_info

    md = kernelscope_cmd("report", str(train), "--format", "md").stdout
    assert "- **Compiled from:** `train_gpt2.py:14` `loss = step_fn(input_ids=ids, labels=ids).loss`" in md
    b = read_bundle(train)
    assert f"compiled from {SITE}" in graph_info(b, b.graphs[0])


def test_a_jobs_summary_groups_its_graphs_by_the_line_they_came_from(tmp_path):
    trace = scale_trace(TRAIN / "trace.log.gz", tmp_path / "job.log", 4)
    bundle_from_trace(trace, tmp_path / "bundle")
    out = kernelscope_cmd("show", str(tmp_path / "bundle")).stdout
    assert "compiled from (1 line of your code;" in out
    assert f"  {SITE}\n      16 graphs of 8 compiled frames: ForCausalLMLoss, forward" in out


def test_the_call_site_is_the_innermost_user_frame_below_the_compiled_one():
    strings = {1: "/home/me/train.py", 2: "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
               3: "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py",
               4: "/home/me/helpers.py"}
    frames = [{"filename": 1, "line": 30, "name": "<module>", "loc": "main()"},
              {"filename": 1, "line": 27, "name": "main", "loc": "loss = step(model, ids)"},
              {"filename": 4, "line": 8, "name": "step", "loc": "return model(ids).loss"},
              {"filename": 2, "line": 1779, "name": "_wrapped_call_impl", "loc": "return self._call_impl()"},
              {"filename": 3, "line": 400, "name": "forward"}]
    stack, site = call_site(frames, strings)
    assert site == {"file": "/home/me/helpers.py", "line": 8, "function": "step", "code": "return model(ids).loss"}
    assert [f["kind"] for f in stack] == ["user", "user", "user", "skip", "library"]
    # A captured function: nothing of the user's below it (kernelscope's harness), so the function itself.
    harness = [{"filename": 5, "line": 90, "name": "run", "loc": "out = fn(*args)"}, {"filename": 1, "line": 3, "name": "f"}]
    _, site = call_site(harness, {**strings, 5: "/opt/kernelscope/capture/session.py"})
    assert (site["file"], site["line"], site["function"]) == ("/home/me/train.py", 3, "f")


def test_the_job_view_of_a_recompile_shows_the_failed_guard():
    """A frame compiled twice (called at two sizes): each compile under the line that called it, the
    recompile with the guard that failed and both values."""
    from kernelscope.bundle.model import Bundle, Graph, Kernel, Recompile
    from kernelscope.job_view import job_text

    b = Bundle(graphs=[Graph(id="0-0-inference", compile_id="0/0", kind="inference", code_name="add_relu",
                             code_file="/w/add_relu.py", code_line=6,
                             call_site={"file": "/w/job.py", "line": 7, "code": "f(a, b)", "function": "<module>"}),
                       Graph(id="0-1-inference", compile_id="0/1", kind="inference", code_name="add_relu",
                             code_file="/w/add_relu.py", code_line=6,
                             call_site={"file": "/w/job.py", "line": 8, "code": "f(c, d)", "function": "<module>"})],
               kernels=[Kernel(id=f"0-{i}-inference/k", graph=f"0-{i}-inference", name="cpp_fused_add_relu_0",
                               kind="pointwise", lang="cpp", launch_index=0) for i in (0, 1)],
               recompiles=[Recompile(compile_id="0/1", reason="0/0: tensor 'a' size mismatch at index 0",
                                     guard={"expected": 65536, "actual": 1000})])
    text = "\n".join(job_text(b))
    assert text.startswith("job: 1 compiled frame, 2 compiles, 2 graphs, 2 kernels")
    assert "job.py:7  f(a, b)\n  compile 0/0  add_relu at add_relu.py:6" in text
    assert "job.py:8  f(c, d)\n  compile 0/1  add_relu at add_relu.py:6" in text
    assert ("recompiled because        0/0: tensor 'a' size mismatch at index 0 (expected 65536, actual 1000)"
            in text)
