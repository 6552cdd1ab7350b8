"""Turning raw torch.compile artifacts (TORCH_TRACE logs, output code, Triton cache) into bundles."""
