"""A training script as users write them, for ``kernelscope run`` (scripts/gpu_check_b26.sh): argparse
flags, a transformers GPT-2 built from a config, AdamW, torch.compile on the model, and a loop over
random token batches that never ends unless ``--steps`` says so. The loss is computed here, on this
file's lines, from the compiled model's logits.

    kernelscope run --graphs 2 --no-ui -o /tmp/x -- python3 benchmarks/scripts/train_hf.py --layers 2
"""

import argparse
import itertools

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--steps", type=int, default=0, help="0: train forever")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_embd=args.embd, n_head=args.heads, vocab_size=args.vocab,
                        n_positions=max(args.seq, 256))
    model = GPT2LMHeadModel(config).to(args.device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    compiled = torch.compile(model)
    steps = range(args.steps) if args.steps else itertools.count()
    for step in steps:
        ids = torch.randint(0, args.vocab, (args.batch, args.seq), device=args.device)
        logits = compiled(input_ids=ids).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, args.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
