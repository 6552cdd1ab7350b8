"""torchvision's ResNet-18 in float32 with random weights (nothing is downloaded), batch 16 at
224x224. For the GPU box, whose image has torchvision:
`kernelscope bench benchmarks/models/tv_resnet18.py::ResNet18 --no-grad --eval`.
"""

import torch
import torchvision

OPTIONS = {"no_grad": True, "eval": True, "args": "f32[16, 3, 224, 224]"}


class ResNet18(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = torchvision.models.resnet18(weights=None)

    def forward(self, x):
        return self.m(x)


def example_inputs(device):
    return (torch.randn(16, 3, 224, 224, device=device),)
