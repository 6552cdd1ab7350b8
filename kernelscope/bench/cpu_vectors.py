"""The vector width a bundle's C++ kernels were generated for, and whether this CPU can run them.

Inductor's CPU code is written for one vector ISA: a kernel loops ``x0 += 16`` and loads
``Vectorized<float>::loadu(p, 16)`` on AVX512 (16 floats, 512 bits), 8 on AVX2. The output code is
compiled again where it is run, with the vector type of the machine that runs it: AVX512 code built
for AVX2 computes half of every stride and leaves the rest unwritten (a bench of an AVX512 bundle on
an AVX2 CPU gave compiled errors of 1e6); AVX2 code built for AVX512 stores past its buffers. So the
bench of a bundle alone compiles its C++ for the width it was written for where the CPU has it, and
says it cannot where it does not. Pure: no torch (the child reads the machine's widths through
bench/torch_private.py).
"""

from __future__ import annotations

import re

# bytes per element of the Vectorized<T> element types Inductor emits
_SIZES = {"float": 4, "double": 8, "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1,
          "bfloat16": 2, "BFloat16": 2, "Half": 2, "half": 2, "bool": 1}  # by the name after any namespace
_LOADU = re.compile(r"Vectorized(N)?<\s*([\w:]+)\s*(?:,\s*(\d+)\s*)?>::loadu\(")
_PUNCT = re.compile(r"[(),;]")
# A load's element count, its last argument: ``static_cast<int64_t>(16)`` or ``16``.
_COUNT = re.compile(r"\s*(?:static_cast<int64_t>\(\s*(\d+)L?\s*\)|(\d+)L?)\s*")
NAMES = {512: "AVX512", 256: "AVX2", 128: "NEON/SSE"}


def vector_bits(source: str) -> int | None:
    """The widest vector a text's C++ kernels load, in bits (512 for AVX512 code); None when no kernel is
    vectorized. A full load of ``Vectorized<T>`` reads one vector (``VectorizedN<T, n>``: n of them)."""
    widest = 0
    for call in _LOADU.finditer(source):
        multi, ctype, n = call.groups()
        size = _SIZES.get(ctype.split("::")[-1])
        count = _COUNT.fullmatch(_last_argument(source, call.end()) or "")
        if not size or count is None:
            continue
        bits = int(count.group(1) or count.group(2)) * size * 8 // (int(n) if multi and n else 1)
        widest = max(widest, bits)
    return widest or None


def _last_argument(source: str, start: int) -> str | None:
    """The last argument of the call whose arguments begin at ``start`` (None past a ``;`` first). The
    address before it may itself hold ``static_cast<int64_t>(63L)`` and calls (a Llama's
    ``x1 + 1024L*((x0 % 63L)) + 65536L*div_floor_integer(x0, 63L)``): only the top level counts."""
    depth, last = 0, start
    for mark in _PUNCT.finditer(source, start):
        c = mark.group()
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return source[last:mark.start()]
            depth -= 1
        elif c == "," and depth == 0:
            last = mark.end()
        elif c == ";":
            return None
    return None


def plan(needed: int | None, picked: int, runnable: list[int]) -> tuple[int | None, str]:
    """(the width to compile for, or None for as it is) and a note; raises ValueError with the user's
    one line when this CPU cannot run the width the code was written for."""
    if not needed or needed == picked:
        return None, ""
    name = NAMES.get(needed, f"{needed}-bit")
    if needed in runnable:
        return needed, (f"the bundle's C++ kernels were written for {needed}-bit vectors ({name}); compiled for "
                        f"them here (this CPU's default is {picked}-bit)")
    have = ", ".join(f"{b}-bit" for b in sorted(runnable, reverse=True)) or "no vector unit Inductor uses"
    raise ValueError(f"the bundle's C++ kernels were written for {needed}-bit vectors ({name}) and this CPU runs "
                     f"{have}: built here they would compute wrong results. Bench it on a CPU with {name} "
                     "(as where it was recorded), or record the program on this machine")
