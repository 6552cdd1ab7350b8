"""x * w + b then sigmoid: 8 transfers eager, 4 fused (vertical / pointwise fusion)."""

import torch


def mul_add_sigmoid(x, w, b):
    return (x * w + b).sigmoid()


def mul_add_sigmoid_inputs(device):
    n = 1 << 24 if device == "cuda" else 1 << 16
    return tuple(torch.randn(n, device=device) for _ in range(3))
