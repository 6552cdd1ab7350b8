"""A function Inductor cannot put in a CUDA graph under `reduce-overhead`: one input lives on the CPU.
`kernelscope capture benchmarks/models/cudagraph_skip.py::scale_add --mode reduce-overhead` shows the
skip and Inductor's reason."""

import torch


def scale_add(x, s):
    return x * s + 1


def scale_add_inputs(device):
    return torch.randn(1 << 20, device=device), torch.tensor(2.0)  # a 0-dim CPU tensor beside a CUDA one
