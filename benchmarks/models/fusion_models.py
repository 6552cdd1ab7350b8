"""Models for the fusion, time-per-line and compile-time checks (scripts/gpu_checks/ncu.sh, test_fusion_reasons.py).

``reduce_broadcast_matmul``: a reduction, then a broadcast of its result, then a matmul: the matmul
is a library call, so the round trips before and after it stay (``kernelscope show OUT --fusion``).
``GPT2x4``: a 4-layer transformers GPT-2 with random weights (nothing is downloaded), for the GPU box:
``kernelscope capture benchmarks/models/fusion_models.py::GPT2x4 --no-grad --eval --args "i64[4, 256] 0..50257"``.
"""

import torch


def reduce_broadcast_matmul(x, w):
    centred = x - x.mean(dim=-1, keepdim=True)  # a reduction, then a broadcast of it
    scaled = torch.relu(centred) * 0.5
    out = scaled @ w  # a library call (extern_kernels.mm): no prologue, no epilogue
    return torch.sigmoid(out) + 1.0


def reduce_broadcast_matmul_inputs(device):
    return (torch.randn(256, 512, device=device), torch.randn(512, 256, device=device))


class GPT2x4(torch.nn.Module):
    """transformers GPT-2 with 4 layers (ids in, logits out)."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        self.m = GPT2LMHeadModel(GPT2Config(n_layer=4))

    def forward(self, ids):
        return self.m(ids).logits

