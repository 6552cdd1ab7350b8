"""A small MLP training step: forward and backward graphs (AOTAutograd traces both)."""

import torch

OPTIONS = {"backward": True}


def mlp_train(x, w1, w2):
    h = torch.nn.functional.gelu(x @ w1)
    return (h @ w2).sum()


def mlp_train_inputs(device):
    return (
        torch.randn(256, 512, device=device),
        torch.randn(512, 1024, device=device, requires_grad=True),
        torch.randn(1024, 512, device=device, requires_grad=True),
    )
