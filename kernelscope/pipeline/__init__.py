"""Triton pipeline views of a bundle's kernels: stages, line mapping, MLIR passes, kernel facts, other archs.

Everything here reads bundle files or runs Triton in a child process; nothing imports triton or torch
at import time, so the UI can use it freely.
"""
