"""`kernelscope open` on TORCH_TRACE folders: the same kernels and fused nodes as kernelscope's own
capture, several compile ids, several ranks, Triton stages from a cache folder, safe output paths."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.bundle.io import BundleError, read_bundle
from kernelscope.cli import main
from kernelscope.report.diff import ADDED, SAME, diff_bundles
from kernelscope.report.opener import open_trace
from kernelscope.report.trace_folder import rank_of
from tests.conftest import GPU_FIXTURES, REF_CASES, REFERENCE, REPO, kernelscope_cmd

# An ordinary job: add_relu compiled on CPU, called at a second shape so Dynamo recompiles (two compile ids).
# INDUCTOR_PROVENANCE=1 as in the reference recordings: it is what names the fused nodes of C++ kernels.
TRACE_JOB = """
import sys
sys.path.insert(0, sys.argv[1])
import torch
from add_relu import add_relu, add_relu_inputs
f = torch.compile(add_relu, dynamic=False)
f(*add_relu_inputs("cpu"))
f(torch.randn(1000), torch.randn(1000))
"""


@pytest.fixture(scope="session")
def cpu_trace(tmp_path_factory) -> Path:
    """A TORCH_TRACE folder written by a plain torch.compile run on CPU (not by kernelscope)."""
    root = tmp_path_factory.mktemp("cpu-trace")
    env = dict(os.environ, TORCH_TRACE=str(root / "trace"), TORCHINDUCTOR_CACHE_DIR=str(root / "inductor"),
               TORCHINDUCTOR_FX_GRAPH_CACHE="0", INDUCTOR_PROVENANCE="1", TORCH_LOGS="recompiles")
    proc = subprocess.run([sys.executable, "-c", TRACE_JOB, str(REPO / "samples")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (root / "stderr.txt").write_text(proc.stderr)
    return root / "trace"


@pytest.fixture()
def user_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kernelscope" / "opened"


def _kernel_facts(bundle, graph_id: str | None = None):
    return [(k.name, k.kind, k.fx_nodes, [(Path(u.file).name, u.line) for u in k.user_lines])
            for k in bundle.kernels if graph_id is None or k.graph == graph_id]


def test_open_gives_the_same_kernels_and_fused_nodes_as_kernelscopes_capture(cpu_trace, cpu_add_relu, tmp_path):
    opened, _, _ = open_trace(cpu_trace, tmp_path / "opened")
    captured = read_bundle(cpu_add_relu)
    assert _kernel_facts(opened, "0-0-inference") == _kernel_facts(captured)
    assert _kernel_facts(captured) == [("cpp_fused_add_relu_0", "cpp", ["add", "relu"], [("add_relu.py", 7)])]
    # Two runs, two temp folders: the kernel's source still compares equal after normalising.
    d = diff_bundles(captured, opened)
    assert [(e.status, e.title()) for e in d.entries] == [(SAME, "cpp_fused_add_relu_0"),
                                                          (ADDED, "cpp_fused_add_relu_0")]
    assert [g.id for g in d.graphs_only_b] == ["0-1-inference"]


def test_open_keeps_every_compile_id_and_the_recompile_reason(cpu_trace, tmp_path):
    opened, _, _ = open_trace(cpu_trace, tmp_path / "opened", stderr_log=str(cpu_trace.parent / "stderr.txt"))
    assert [(g.id, g.compile_id) for g in opened.graphs] == [("0-0-inference", "0/0"), ("0-1-inference", "0/1")]
    assert [k.fx_nodes for k in opened.kernels] == [["add", "relu"], ["add", "relu"]]
    assert [(k.graph, sum(b.bytes for b in k.buffers if b.role == "write")) for k in opened.kernels] == \
        [("0-0-inference", 65536 * 4), ("0-1-inference", 1000 * 4)]
    assert len(opened.recompiles) == 1 and "size mismatch" in opened.recompiles[0].reason


def _as_ranks(trace: Path, dest: Path, ranks: tuple[int, ...]) -> Path:
    """The one log rewritten as several ranks' logs, as a distributed job writes them."""
    [log] = list(trace.glob("*.log"))
    dest.mkdir()
    for r in ranks:
        text = re.sub(r"^([VIWEC]\d{4} [^\]]*\] )\{", rf'\1{{"rank": {r}, ', log.read_text(), flags=re.M)
        (dest / f"dedicated_log_torch_trace_rank_{r}_x{r}.log").write_text(text)
    return dest


def test_open_a_multi_rank_trace_opens_every_rank_and_one_with_rank(cpu_trace, tmp_path, user_cache, capsys):
    ranks = _as_ranks(cpu_trace, tmp_path / "job", (0, 1))
    assert [rank_of(p) for p in sorted(ranks.glob("*.log"))] == [0, 1]
    assert main(["open", str(ranks), "--no-ui"]) == 0
    captured = capsys.readouterr()
    assert "(2 ranks): 4 compile ids, 4 graphs, 4 kernels" in captured.err
    [out] = list(user_cache.iterdir())
    opened = read_bundle(out)
    assert opened.environment["ranks"] == [0, 1]
    assert sorted({g.compile_id.split("/")[0] for g in opened.graphs}) == ["rank0", "rank1"]  # side by side
    assert any("`kernelscope open --rank N` opens one" in n for n in opened.notes)
    assert main(["open", str(ranks), "--rank", "1", "--no-ui"]) == 0
    assert "(rank 1 of 2): 2 compile ids, 2 graphs, 2 kernels" in capsys.readouterr().err
    assert len(list(user_cache.iterdir())) == 2
    with pytest.raises(BundleError, match="no log of rank 5; ranks found: 0, 1"):
        open_trace(ranks, tmp_path / "x", rank=5)


def test_rank_read_from_records_when_the_file_name_lacks_it(cpu_trace, tmp_path):
    ranks = _as_ranks(cpu_trace, tmp_path / "job", (3,))
    [log] = list(ranks.glob("*.log"))
    plain = log.rename(log.with_name("worker.log"))
    assert rank_of(plain) == 3


@pytest.mark.parametrize("case", ["add_relu", "linear_relu", "with_break"])
def test_open_reference_trace_with_triton_cache_has_stages(case, tmp_path, user_cache):
    src = REFERENCE / case
    with_cache, _, _ = open_trace(src / "trace", None, triton_cache=str(src / "triton"))
    triton = [k for k in with_cache.kernels if k.lang == "triton"]
    assert triton and all({"ttir", "ptx"} <= set(v.files) for k in triton for v in k.triton)
    without, out, _ = open_trace(src / "trace", tmp_path / "plain")
    assert all(not k.triton for k in without.kernels)
    assert "Triton stages absent: no Triton cache folder was given (--triton-cache)" in without.notes


GPU_NAMES = {"layernorm": "layer_norm", "with_break": "graph_break"}  # reference case -> sample name
TRAINING_ONLY = {"linear_relu": {"le"}, "linear_relu_autotune": {"le"}}  # nodes only the reference computes
GPU_OPEN_CASES = [c for c in REF_CASES if (GPU_FIXTURES / GPU_NAMES.get(c, c) / "bundle.json").is_file()]


@pytest.mark.parametrize("case", GPU_OPEN_CASES or [pytest.param("add_relu", marks=pytest.mark.skip(
    "tests/fixtures/gpu/ has no GPU capture yet"))])
def test_reference_trace_opens_to_the_same_kernels_as_a_gpu_capture(case, tmp_path):
    src = REFERENCE / case
    opened, _, _ = open_trace(src / "trace", tmp_path / case, triton_cache=str(src / "triton"))
    captured = read_bundle(GPU_FIXTURES / GPU_NAMES.get(case, case))
    kinds = ([g.kind for g in opened.graphs], [g.kind for g in captured.graphs])
    if case in TRAINING_ONLY:
        # The reference ran nn.Linear with trainable parameters: a forward graph that also computes relu's
        # mask for backward (`le`, hence `threshold_backward` in the kernel's name); the capture passed plain
        # tensors (an inference graph). The same fusion otherwise.
        assert kinds == (["forward"], ["inference"])
        assert [(k.kind, [n for n in k.fx_nodes if n not in TRAINING_ONLY[case]]) for k in opened.kernels] == \
            [(k.kind, k.fx_nodes) for k in captured.kernels]
        return
    assert kinds[0] == kinds[1]
    assert [(k.name, k.kind, k.fx_nodes) for k in opened.kernels] == \
        [(k.name, k.kind, k.fx_nodes) for k in captured.kernels]


def test_open_writes_to_the_user_cache_and_reopening_refreshes(cpu_trace, user_cache, capsys):
    assert main(["open", str(cpu_trace), "--no-ui"]) == 0
    first = capsys.readouterr()
    assert "cpp_fused_add_relu_0" in first.out  # the summary
    [out] = list(user_cache.iterdir())
    assert out.name.startswith("cpu-trace0-trace-") or out.name.startswith(cpu_trace.parent.name)
    assert f"-> {out}" in first.err
    assert main(["open", str(cpu_trace), "--no-ui"]) == 0
    assert list(user_cache.iterdir()) == [out]


def test_open_never_replaces_a_users_folder(cpu_trace, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    proc = kernelscope_cmd("open", str(cpu_trace), "-o", str(mine), "--force", "--no-ui")
    assert proc.returncode == 2 and "is not a kernelscope bundle; refusing to replace it" in proc.stderr
    assert (mine / "notes.txt").read_text() == "keep me"
    bundle = tmp_path / "b"
    assert kernelscope_cmd("open", str(cpu_trace), "-o", str(bundle), "--no-ui").returncode == 0
    again = kernelscope_cmd("open", str(cpu_trace), "-o", str(bundle), "--no-ui")
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr


def test_open_errors_are_one_line(tmp_path):
    proc = kernelscope_cmd("open", str(tmp_path / "nope"), "--no-ui")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "no such TORCH_TRACE folder" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = kernelscope_cmd("open", str(tmp_path / "empty"), "--no-ui")
    assert proc.returncode == 2 and "no TORCH_TRACE logs (*.log) found" in proc.stderr


def test_open_hands_the_bundle_to_the_explorer(cpu_trace, user_cache, monkeypatch):
    import kernelscope.ui.app as ui_app

    seen: list[argparse.Namespace] = []
    monkeypatch.setattr(ui_app, "main", lambda args: seen.append(args) or 0)
    assert main(["open", str(cpu_trace)]) == 0
    [args] = seen
    [out] = list(user_cache.iterdir())
    assert args.what == str(out) and args.out is None and args.mode is None and args.passes is False


def test_cpu_backward_kernels_get_their_fused_nodes_from_the_stack_trace_provenance(tmp_path, capsys):
    # A real CPU mlp_train --backward trace: Inductor's node mapping for the backward graph is empty and
    # its C++ launches carry no node comments; the kernels' stack traces still tie them to user lines.
    trace = Path(__file__).parent / "fixtures" / "traces" / "mlp_train_cpu"
    bundle, _, _ = open_trace(trace, tmp_path / "opened")
    k = bundle.kernel("0-0-backward/cpp_fused_gelu_gelu_backward_1")
    assert k.fx_nodes == ["mul_1", "erf", "add", "mul_4", "mul_5", "mul_6", "exp", "mul_7", "mul_8", "add_2",
                          "mul_9"]  # the 11 nodes the GPU capture's triton_poi_fused_gelu_gelu_backward_1 fuses
    assert k.provenance.startswith("stack traces")
    assert bundle.kernel("0-0-backward/cpp_fused_expand_mm_0").fx_nodes == ["expand"]
    # the forward graph keeps Inductor's own mapping
    assert bundle.kernel("0-0-forward/cpp_fused_gelu_0").provenance == "provenance"
    from kernelscope.show import summary_text
    text = summary_text(bundle)
    assert "cpp_fused_gelu_gelu_backward_1" in text and "fx nodes: mul_1, erf, add, mul_4" in text
