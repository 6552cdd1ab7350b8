"""sin and cos of one input: horizontal fusion, two independent ops that read x once."""

import torch


def sin_cos(x):
    return torch.sin(x), torch.cos(x)


def sin_cos_inputs(device):
    n = 1 << 24 if device == "cuda" else 1 << 16
    return (torch.randn(n, device=device),)
