"""bench's correctness verdict against a float64 run (PyTorch's fp64_ref rule), on pairs of
functions from tests/fixtures/targets/rounding.py: honest rewrites that round differently pass
(bfloat16 and float32), wrong results fail (a skipped block, another op, a scaled result, a wrong
in-place write), and a module's weights come back as they were after the float64 run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from kernelscope.bench.correctness import compare, correctness
from kernelscope.bench.step import Step
from kernelscope.bench.wording import verdict_line

FILE = Path(__file__).parent / "fixtures" / "targets" / "rounding.py"


def _targets():
    spec = importlib.util.spec_from_file_location("rounding_targets", FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = _targets()


def request_for(inputs: str) -> dict:
    """A request whose inputs come from ``NAME_inputs(device)`` in the fixture file."""
    return {"device": "cpu", "args": None, "options": {"no_grad": True},
            "target": {"file": str(FILE), "name": inputs.removesuffix("_inputs")}}


def check(eager, compiled, inputs: str, module=None) -> dict:
    return correctness(request_for(inputs), module or T, Step(eager, False, {"no_grad": True}),
                       Step(compiled, False, {"no_grad": True}))


def test_bf16_chain_with_float32_inside_passes_where_a_fixed_tolerance_cried_mismatch(monkeypatch):
    x, w = T.bf16_mlp_inputs("cpu")
    e, c = T.bf16_mlp(x, w), T.bf16_mlp_fp32_inside(x, w)
    # The old rule (allclose at rtol=1.6e-2, atol=1e-2) flags this honest difference ...
    assert not torch.allclose(c.double(), e.double(), rtol=1.6e-2, atol=1e-2)
    made = []  # the inputs the check drew (its seed is its own), to size its reference by
    draw = T.bf16_mlp_inputs
    monkeypatch.setattr(T, "bf16_mlp_inputs", lambda device: made.append(draw(device)) or made[-1])
    verdict = check(T.bf16_mlp, T.bf16_mlp_fp32_inside, "bf16_mlp_inputs")
    # ... the float64 run shows compiled closer to the truth than eager.
    assert verdict["ok"], verdict["problems"]
    assert verdict["reference"] == "float64"
    assert verdict["compiled_rmse"] < verdict["eager_rmse"]
    line = verdict_line(verdict)
    assert line.startswith("correctness OK: vs a float64 run (output 0): compiled rmse ")
    # the errors come with the size of what they are errors of
    (x, w), = made
    expected = float(torch.sqrt(torch.mean(T.bf16_mlp(x.double(), w.double()) ** 2)))
    assert verdict["reference_rms"] == pytest.approx(expected, rel=0.006)  # 3 significant figures
    assert f", on values of rms {verdict['reference_rms']:.3g}; rule: " in line
    assert "rule: compiled's rmse vs float64 <= 3x eager's" in line


def test_fp32_split_k_sum_passes_where_a_fixed_tolerance_cried_mismatch():
    x, w = T.fp32_matmul_inputs("cpu")
    e, c = T.fp32_matmul(x, w), T.fp32_matmul_split_k(x, w)
    assert not torch.allclose(c.double(), e.double(), rtol=1e-3, atol=1e-4)
    verdict = check(T.fp32_matmul, T.fp32_matmul_split_k, "fp32_matmul_inputs")
    assert verdict["ok"], verdict["problems"]
    assert "<= 2x eager's" in verdict["rule"]


@pytest.mark.parametrize("wrong", ["fp32_matmul_skips_a_block", "fp32_matmul_scaled"])
def test_a_wrong_matmul_fails_with_both_errors_named(wrong):
    verdict = check(T.fp32_matmul, getattr(T, wrong), "fp32_matmul_inputs")
    assert not verdict["ok"]
    assert verdict["problems"][0].startswith("output 0: compiled's rmse vs float64 ")
    assert verdict_line(verdict).startswith("correctness MISMATCH: vs a float64 run (output 0)")


def test_a_custom_op_that_differs_fails():
    verdict = check(T.gelu_exact, T.gelu_tanh, "gelu_inputs")
    assert not verdict["ok"]
    assert verdict["compiled_rmse"] > 100 * verdict["eager_rmse"]


def test_without_a_reference_the_fallback_is_named_and_still_catches_a_scaled_result():
    x, w = T.fp32_matmul_inputs("cpu")
    e = T.fp32_matmul(x, w)
    ok = compare([e], [T.fp32_matmul_split_k(x, w)], None, reference=None, no_reference="not run")
    assert ok["ok"] and ok["reference"] == "none"
    assert "no float64 reference (not run); rule: cosine similarity" in verdict_line(ok)
    wrong = compare([e], [T.fp32_matmul_scaled(x, w)])  # the positional form other benches call
    assert not wrong["ok"] and "norms differ by 3.00%" in wrong["problems"][0]


def test_a_bf16_module_is_judged_in_float64_and_keeps_its_own_weights():
    model = T.Bf16Mlp().eval()
    before = {n: (p.dtype, p.data_ptr()) for n, p in model.named_parameters()}

    def fp32_inside(x):
        y = x.float()
        for layer in model.layers:
            y = torch.nn.functional.gelu(y @ layer.weight.float().t() + layer.bias.float()) * 4.0
        return y.to(x.dtype)

    verdict = check(model, fp32_inside, "bf16_module_inputs")
    assert verdict["ok"], verdict["problems"]
    assert verdict["reference"] == "float64"
    assert {n: (p.dtype, p.data_ptr()) for n, p in model.named_parameters()} == before
    assert model.scale.dtype == torch.bfloat16


def test_tied_weights_come_back_as_they_were():
    from kernelscope.bench.correctness import float64_weights

    model = torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.Linear(8, 10, bias=False))
    model[1].weight = model[0].weight  # tied, as GPT-2's lm_head and wte
    ptr = model[0].weight.data_ptr()
    with float64_weights([model]):
        assert model[1].weight.dtype == torch.float64 and model[1].weight is model[0].weight
    assert model[0].weight.dtype == torch.float32 and model[1].weight.data_ptr() == ptr


def test_a_function_with_a_dtype_of_its_own_falls_back_and_says_why():
    def to_half(x):
        return (x * 2).to(torch.bfloat16)

    verdict = check(to_half, to_half, "gelu_inputs")
    assert verdict["ok"] and verdict["reference"] == "none"
    assert verdict["no_reference"] == "the function's results do not become float64 when its inputs and weights do"


@pytest.mark.slow
def test_inductor_bf16_module_passes():
    """A real torch.compile of the bfloat16 module (Inductor's C++ kernels keep float32 inside)."""
    model = T.Bf16Mlp().eval()
    compiled = torch.compile(model)
    verdict = correctness(request_for("bf16_module_inputs"), T, Step(model, False, {"no_grad": True}),
                          Step(compiled, False, {"no_grad": True}))
    assert verdict["ok"], verdict["problems"]
    assert verdict["reference"] == "float64"
