"""A bundle's own code under --run-bundle-code, given inputs no tensor can have or more than the machine
holds, or an FX graph that calls more than ATen: one line before anything is allocated or run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kernelscope.bench.bundle_plan import PlanError, parse_fx
from tests.conftest import REPO, kernelscope_cmd

torch = pytest.importorskip("torch")
from kernelscope.bench import bundle_tensors, from_bundle  # noqa: E402  (import torch)
from kernelscope.bench.step import BenchFailure  # noqa: E402

CPU_FIXTURE = REPO / "tests" / "fixtures" / "cpu" / "add_relu_two_calls"


def _plan(tmp_path: Path, shape, stride, declared: str = "f32[8, 3][3, 1]cpu", dtype: str = "float32") -> dict:
    fx = tmp_path / "fx.txt"
    fx.write_text(f'class GraphModule(torch.nn.Module):\n    def forward(self, arg0_1: "{declared}"):\n'
                  "        return (arg0_1,)\n")
    return {"graph": "0-0-inference", "eager_fx": str(fx),
            "inputs": [{"name": "arg0_1", "kind": "tensor", "shape": shape, "stride": stride, "dtype": dtype,
                        "device": "cpu"}]}


@pytest.mark.parametrize("shape, stride, words", [
    ([8, -3], [3, 1], "negative size"),
    ([8, 3], [-3, 1], "negative stride"),
    ([8, 3], [3], "whole-number size and stride"),
    ([8, 3.5], [3, 1], "whole-number size and stride"),
    ([10**30], [1], "more than the"),
    ([4_000_000, 1_000_000], [1_000_000, 1], "more than the"),
])
def test_inputs_no_tensor_has_or_no_machine_holds_are_refused_before_allocating(tmp_path, shape, stride, words):
    plan = _plan(tmp_path, shape, stride, declared="f32[s0][s1]cpu")
    with pytest.raises(BenchFailure) as got:
        bundle_tensors.check_inputs([plan], "cpu")
    assert words in got.value.message and "\n" not in got.value.message


def test_twelve_gigabytes_on_a_machine_with_eight_free_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_tensors, "free_bytes", lambda device: 8 << 30)
    with pytest.raises(BenchFailure, match=r"need 12\.0 GB .* free on cpu"):
        bundle_tensors.check_inputs([_plan(tmp_path, [3_000_000_000], [1], declared="f32[s0][1]cpu")], "cpu")
    assert bundle_tensors.check_inputs([_plan(tmp_path, [8, 3], [3, 1])], "cpu") == 96


def test_a_stride_the_fx_graph_does_not_declare_is_refused(tmp_path):
    with pytest.raises(BenchFailure, match=r"get_args\(\) makes stride \[0, 1\], but the FX graph declares \[3, 1\]"):
        bundle_tensors.check_fx_agrees(_plan(tmp_path, [8, 3], [0, 1]))
    bundle_tensors.check_fx_agrees(_plan(tmp_path, [8, 3], [3, 1]))
    bundle_tensors.check_fx_agrees(_plan(tmp_path, [8, 3], [0, 1], declared="f32[8, 3][0, 1]cpu"))  # a broadcast input
    bundle_tensors.check_fx_agrees(_plan(tmp_path, [8, 3], [3, 1], declared="f32[s0, 3][3, 1]cpu"))


GRAPH = '''class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[8][1]cpu"):
        add: "f32[8][1]cpu" = torch.ops.aten.add.Tensor(primals_1, 1)
        {extra}
        return (add,)
'''


@pytest.mark.parametrize("line, called", [
    ("y = torch.save(add, 'x.pt')", "torch.save"),
    ("y = torch.load('x.pt')", "torch.load"),
    ("y = torch.hub.load('a', 'b')", "torch.hub.load"),
    ("y = torch.ops.higher_order.cond(add, add, add, add)", "torch.ops.higher_order.cond"),
    ("y = torch.ops.aten.add.Tensor.redispatch(add)", "torch.ops.aten.add.Tensor.redispatch"),
])
def test_the_fx_check_accepts_only_plain_aten_calls(line, called):
    with pytest.raises(PlanError, match=re.escape(f"calls {called}, not a plain ATen op")):
        parse_fx(GRAPH.format(extra=line))
    parse_fx(GRAPH.format(extra="y = torch.ops.prims.convert_element_type.default(add, torch.float16)"))


def test_the_fx_graph_runs_with_a_torch_that_has_only_ops_and_constants(tmp_path):
    fx = tmp_path / "fx.txt"
    fx.write_text(GRAPH.format(extra="z = torch.ops.aten.mul.Tensor(add, 2)"))
    module = from_bundle._fx_module(fx.read_text(), fx, "g")
    assert module(torch.ones(8)).__getitem__(0).tolist() == [2.0] * 8
    fake = from_bundle.fx_torch()
    assert fake.float32 is torch.float32 and fake.strided is torch.strided
    assert not any(hasattr(fake, name) for name in ("save", "load", "hub", "_C", "from_file"))


def _bundle_alone(tmp_path: Path, get_args_line: str) -> Path:
    b = tmp_path / "b"
    shutil.copytree(CPU_FIXTURE, b)
    m = json.loads((b / "bundle.json").read_text())
    m["target"] = {"spec": "python train.py", "kind": "command", "origin": "run", "file": "", "name": ""}
    (b / "bundle.json").write_text(json.dumps(m))
    code = b / m["graphs"][0]["files"]["output_code"]
    text = code.read_text()
    code.write_text(text.replace("    arg0_1 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)",
                                 get_args_line, 1))
    return b


@pytest.mark.parametrize("line, words", [
    ("    arg0_1 = rand_strided((64, ), (-1, ), device='cpu', dtype=torch.float32)", "negative stride"),
    ("    arg0_1 = rand_strided((1000000000000000000000000000000, ), (1, ), device='cpu', dtype=torch.float32)", "more than the"),
])
@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_bench_run_bundle_code_of_bad_inputs_is_one_line(tmp_path, line, words):
    b = _bundle_alone(tmp_path, line)
    proc = kernelscope_cmd("bench", str(b), "--run-bundle-code", "--device", "cpu", "-q",
                           env={"KERNELSCOPE_CACHE": str(tmp_path / "cache")}, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
