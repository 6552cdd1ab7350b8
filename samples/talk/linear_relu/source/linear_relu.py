"""Linear + relu: a GEMM (cuBLAS mm, or a Triton template under max-autotune) with its epilogue."""

import torch
import torch.nn.functional as F


def linear_relu(x, weight, bias):
    return torch.relu(F.linear(x, weight, bias))


def linear_relu_inputs(device):
    torch.manual_seed(0)
    return (torch.randn(32, 512, device=device), torch.randn(512, 512, device=device) / 512**0.5,
            torch.randn(512, device=device))


class LinearReLU(torch.nn.Module):
    """The same as an nn.Module: `kernelscope capture samples/linear_relu.py::LinearReLU`."""

    def __init__(self, features=512):
        super().__init__()
        self.linear = torch.nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def LinearReLU_inputs(device):
    return (torch.randn(32, 512, device=device),)
