"""bench's correctness check on a function that writes its inputs in place (pure CPU, eager on both
sides, so no compile is needed): each side gets its own copy of the inputs, and what the function
wrote into them is compared too."""

from __future__ import annotations

import torch

from kernelscope.bench.correctness import correctness
from kernelscope.bench.step import Step
from kernelscope.capture.spec import calls_from_text

REQUEST = {"device": "cpu", "args": calls_from_text("f32[256], f32[256]")[0]}


def add_in_place(x, y):
    x.add_(y)
    return torch.relu(x)


def test_a_function_that_writes_its_input_compares_equal_with_itself():
    verdict = correctness(REQUEST, None, Step(add_in_place, False), Step(add_in_place, False))
    assert verdict["ok"], verdict["problems"]
    assert verdict["tensors"] == 2  # the output and the input written in place
    assert "1 input written in place" in verdict["compared"]


def test_a_wrong_in_place_write_is_named():
    def writes_twice(x, y):
        x.add_(y).add_(y)
        return torch.relu(x - y)  # the same output as add_in_place, a different input afterwards

    verdict = correctness(REQUEST, None, Step(add_in_place, False), Step(writes_twice, False))
    assert not verdict["ok"]
    assert len(verdict["problems"]) == 1
    assert verdict["problems"][0].startswith("input 0 as written in place: compiled's rmse vs float64 ")


def test_an_attention_ops_rng_state_is_not_compared_as_a_result():
    """The philox seed and offset a fused attention op returns (saved for its backward) hold whatever the kernel
    left there with dropout off: compared, they made an H100 Llama training step's correct code a MISMATCH.
    Read off the printed FX graph, as the bench child has it (a bf16 Llama forward's lines)."""
    from kernelscope.bench.bundle_correctness import attention_state_outputs

    fx = """
        _scaled_dot_product_flash_attention = torch.ops.aten._scaled_dot_product_flash_attention.default(permute, permute_1, permute_2, 0.0, True, scale = 0.125)
        getitem: "bf16[4, 4, 128, 64][32768, 64, 256, 1]cuda:0" = _scaled_dot_product_flash_attention[0]
        getitem_1: "f32[4, 4, 128][512, 128, 1]cuda:0" = _scaled_dot_product_flash_attention[1]
        getitem_6: "i64[2][1]cuda:0" = _scaled_dot_product_flash_attention[6]
        getitem_7: "i64[][]cuda:0" = _scaled_dot_product_flash_attention[7];  _scaled_dot_product_flash_attention = None
        _scaled_dot_product_efficient_attention = torch.ops.aten._scaled_dot_product_efficient_attention.default(a, b, c, None, True)
        getitem_12 = _scaled_dot_product_efficient_attention[2]
        getitem_13 = _scaled_dot_product_efficient_attention[3]
        getitem_14 = _scaled_dot_product_efficient_attention[1]
        getitem_20 = some_tuple[6]
    """
    outputs = ["view", "getitem", "getitem_1", "getitem_6", "getitem_7", "getitem_12", "getitem_13", "getitem_14",
               "getitem_20"]
    assert attention_state_outputs(fx, outputs) == {3, 4, 5, 6}


def test_synthetic_weights_have_a_weights_scale():
    """Unit-variance weights grow a transformer's activations past bf16's range in a few layers: a 2-D input
    is drawn with 1/sqrt(its last dim), as nn.Linear initialises a weight; a vector stays unit-variance."""
    from kernelscope.bench.bundle_tensors import make_input

    torch.manual_seed(0)
    w = make_input({"kind": "tensor", "name": "w", "dtype": "float32", "shape": [512, 256], "stride": [256, 1]}, "cpu")
    b = make_input({"kind": "tensor", "name": "b", "dtype": "float32", "shape": [4096], "stride": [1]}, "cpu")
    assert abs(w.std().item() - 1 / 16) < 0.005 and abs(b.std().item() - 1.0) < 0.05


def test_fused_attention_runs_in_float64_for_the_reference_as_the_math_it_stands_for():
    """A training step's graphs call the fused attention kernels, which have no float64: the reference run
    gets their math, laid out as the kernels lay it out, and its gradients (an fp32 Llama's bench had none)."""
    import torch.nn.functional as F

    from kernelscope.bench.reference_attention import reference_aten

    torch.manual_seed(0)
    # (batch, heads, seq, dim) views of (batch, seq, heads, dim) storage, as a transformer's projections give
    q, k, v = (torch.randn(2, 8, 4, 16, dtype=torch.float64).transpose(1, 2) for _ in range(3))
    aten = reference_aten()
    out, lse, seed, offset = aten._scaled_dot_product_efficient_attention.default(q, k, v, None, True, 0.0,
                                                                                  True, scale=0.25)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
    assert torch.allclose(out, want) and out.transpose(1, 2).is_contiguous()  # (batch, seq, heads, dim) in memory
    assert lse.shape == (2, 4, 32) and seed.numel() == 1  # log-sum-exp rows padded to 32, as the kernel's
    grad = torch.randn_like(out)
    got = aten._scaled_dot_product_efficient_attention_backward.default(
        grad, q, k, v, None, out, lse, seed, offset, 0.0, [True, True, True, False], True, scale=0.25)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    F.scaled_dot_product_attention(*leaves, is_causal=True, scale=0.25).backward(grad)
    for mine, theirs, given in zip(got[:3], leaves, (q, k, v)):
        assert torch.allclose(mine, theirs.grad) and mine.stride() == given.stride()  # laid out as its input
    assert got[3] is None
    flash = aten._scaled_dot_product_flash_attention.default(q, k, v, 0.0, False, scale=0.25)
    assert torch.allclose(flash[0], F.scaled_dot_product_attention(q, k, v, scale=0.25))
