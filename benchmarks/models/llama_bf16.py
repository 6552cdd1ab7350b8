"""A 4-layer transformers Llama in bfloat16, built from a config with random weights (nothing is
downloaded), as a user writes it: converted to bfloat16 and put in eval in ``__init__``. For the GPU
box, whose image has transformers:
`kernelscope bench benchmarks/models/llama_bf16.py::Llama --no-grad --eval [--mode reduce-overhead]`.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

OPTIONS = {"no_grad": True, "eval": True, "args": "i64[4, 512] 0..32000"}


class Llama(torch.nn.Module):
    def __init__(self, layers: int = 4):
        super().__init__()
        config = LlamaConfig(num_hidden_layers=layers, hidden_size=2048, intermediate_size=5632,
                             num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                             max_position_embeddings=2048)
        self.m = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, ids):
        return self.m(ids).logits


def example_inputs(device):
    return (torch.randint(0, 32000, (4, 512), device=device),)
