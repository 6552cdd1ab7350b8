"""A print in the middle: Dynamo breaks the graph, so two graphs and no fusion across the print."""

import torch


def graph_break(x):
    x = torch.sin(x) * 2
    print("shape", x.shape)
    return torch.cos(x) + 1


def graph_break_inputs(device):
    return (torch.randn(1024, device=device),)
