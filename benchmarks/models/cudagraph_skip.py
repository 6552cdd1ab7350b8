"""Functions for which Inductor cannot (or may not) replay a CUDA graph under `reduce-overhead`:

    kernelscope capture benchmarks/models/cudagraph_skip.py::mutate_input --mode reduce-overhead
    kernelscope bench   benchmarks/models/cudagraph_skip.py::mutate_input --mode reduce-overhead

- mutate_input: writes its input in place; CUDA graph trees skip a graph that mutates an input they
  do not own ("mutated inputs").
- branch: a data-dependent torch.cond on the GPU; Inductor disables CUDA graphs for control flow.
- scale_add: a 0-dim CPU tensor beside a CUDA one (a CPU scalar is allowed: the graph is recorded).
"""

import torch


def scale_add(x, s):
    return x * s + 1


def scale_add_inputs(device):
    return torch.randn(1 << 20, device=device), torch.tensor(2.0)  # a 0-dim CPU tensor beside a CUDA one


def mutate_input(x, y):
    x.add_(y)  # the caller's tensor, written in place
    return torch.relu(x)


def mutate_input_inputs(device):
    return torch.randn(1 << 20, device=device), torch.randn(1 << 20, device=device)


def branch(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))


def branch_inputs(device):
    return (torch.randn(1 << 20, device=device),)
