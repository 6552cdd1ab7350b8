"""A transformers Llama training step as users write one, for ``kernelscope run`` and the bench of its bundle
(`bash scripts/gpu_verify.sh train-bench`): a Llama built from a config (random weights), bf16 or fp32, AdamW,
torch.compile on the loss (forward + cross entropy, so Inductor compiles the backward too) and on the optimizer
step, over random token batches.

    kernelscope run --no-ui -o /tmp/llama -- python3 benchmarks/scripts/train_llama.py --bf16 --steps 2
"""

import argparse

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--bf16", action="store_true", help="weights and activations in bfloat16")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=args.layers, hidden_size=args.hidden, intermediate_size=args.hidden * 3,
                         num_attention_heads=args.heads, num_key_value_heads=args.heads, vocab_size=args.vocab,
                         max_position_embeddings=max(args.seq, 256))
    model = LlamaForCausalLM(config).to(args.device, torch.bfloat16 if args.bf16 else torch.float32).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def loss_of(ids: torch.Tensor) -> torch.Tensor:
        logits = model(input_ids=ids).logits
        return F.cross_entropy(logits[:, :-1].reshape(-1, args.vocab).float(), ids[:, 1:].reshape(-1))

    compiled = torch.compile(loss_of)
    step_fn = torch.compile(optimizer.step)
    for step in range(args.steps):
        ids = torch.randint(0, args.vocab, (args.batch, args.seq), device=args.device)
        loss = compiled(ids)
        loss.backward()
        step_fn()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
