"""A real multi-file model with repeated layers: HuggingFace GPT-2 (12 layers, 124M parameters),
built from its config with random weights (nothing is downloaded). For the GPU box, whose image has
transformers; `kernelscope capture benchmarks/models/hf_gpt2.py::GPT2 --no-grad --eval`.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

OPTIONS = {"no_grad": True, "eval": True, "args": "i64[4, 512] 0..50257"}


class GPT2(torch.nn.Module):
    def __init__(self, layers: int = 12):
        super().__init__()
        self.m = GPT2LMHeadModel(GPT2Config(n_layer=layers))

    def forward(self, ids):
        return self.m(ids).logits
