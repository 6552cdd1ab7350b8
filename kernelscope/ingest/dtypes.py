"""Dtypes and sizes as Inductor's artifacts print them: bytes per element, FX's short dtype names
("f32[4, 8]"), the shapes of an FX graph's placeholders, a buffer's size in bytes. Pure Python."""

from __future__ import annotations

import re
from typing import Any

DTYPE_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
    "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}
# FX prints dtypes in short form ("f32[4, 8]").
SHORT_DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
    "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "b8": "bool", "c64": "complex64",
    "c128": "complex128", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "u16": "uint16",
    "u32": "uint32", "u64": "uint64",
}

# A tensor as FX annotates it: ``name: "f32[4, s0][s0, 1]"`` (name, short dtype, shape, stride).
TENSOR_ANNOTATION = re.compile(r"(\w+): \"([a-z0-9]+)\[([^\]]*)\]\[([^\]]*)\]")


def annotated_tensors(text: str) -> dict[str, tuple[list[Any], list[Any], str]]:
    """name -> (shape, stride, dtype) of every annotated tensor in a printed FX graph's text."""
    return {name: (split_dims(shape), split_dims(stride), SHORT_DTYPES.get(short, short))
            for name, short, shape, stride in TENSOR_ANNOTATION.findall(text)}


def parse_placeholders(graph_text: str) -> dict[str, tuple[list[Any], list[Any], str]]:
    """name -> (shape, stride, dtype) from an FX graph's printed forward() signature."""
    m = re.search(r"def forward\((.*?)\):", graph_text, re.S)
    return annotated_tensors(m.group(1)) if m else {}


_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits only: str.isdigit takes "²", which int() refuses


def split_dims(text: str) -> list[Any]:
    """``"4, s0, 8L"`` as ``[4, "s0", 8]``: numbers as ints (C++'s ``L`` suffix dropped), symbols as text."""
    dims: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if part:
            number = part.removesuffix("L")
            dims.append(int(number) if _INTEGER.fullmatch(number) else part)
    return dims


def buffer_bytes(shape: list[Any], dtype: str) -> int | None:
    size = DTYPE_BYTES.get(dtype)
    if size is None or any(not isinstance(d, int) for d in shape):
        return None
    n = 1
    for d in shape:
        n *= d
    return n * size
