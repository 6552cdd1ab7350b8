"""layer_norm: mean, variance and the affine epilogue in one persistent reduction kernel."""

import torch


def layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def layer_norm_inputs(device):
    return (torch.randn(4096, 1024, device=device), torch.randn(1024, device=device),
            torch.randn(1024, device=device))
