"""add + relu: two eager kernels and 5 array-sized transfers become 1 fused kernel and 3."""

import torch


def add_relu(a, b):
    return (a + b).relu()


def add_relu_inputs(device):
    n = 1 << 24 if device == "cuda" else 1 << 16
    return torch.randn(n, device=device), torch.randn(n, device=device)
