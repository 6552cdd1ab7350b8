"""Normalising generated texts before comparing them: temp paths, cache hashes and addresses vary
from run to run and say nothing about the kernel, so two equal kernels must compare equal."""

from __future__ import annotations

import re

# A path is matched only from the start of its token (the look-behind): an unanchored leading
# ``[^...]*`` would be tried again from every character of a long token, quadratic in its length.
_TOKEN_START = r"(?<![^\s\"'(),:])"

# Order matters: whole paths first (they contain hashes), then bare hashes.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Inductor's generated files: /tmp/torchinductor_u/ab/cab...xyz.py (any folder, any suffix)
    (re.compile(_TOKEN_START + r"[^\s\"'(),:]*/c[a-z0-9]{50,52}\.(py|cpp|so|h)\b"), r"<inductor>/<hash>.\1"),
    (re.compile(r"\bc[a-z0-9]{50,52}\b"), "<hash>"),
    # Temp and cache folders
    (re.compile(r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders|/dev/shm)/[^\s\"',:()]*"), "<tmp>"),
    (re.compile(_TOKEN_START + r"[^\s\"',:()]*/torchinductor_[^\s\"',:()]*"), "<tmp>"),
    # Triton cache keys (base32) and hex digests (backend_hash, metadata hashes)
    (re.compile(r"\b[A-Z2-7]{52}\b"), "<hash>"),
    (re.compile(r"\b[0-9a-fA-F]{32,64}\b"), "<hash>"),
    # Pointers printed into reprs
    (re.compile(r"\b0x[0-9a-fA-F]{9,16}\b"), "0x<addr>"),
)


_DEBUG_INFO = re.compile(r"^\t\.section\t\.debug_info\n\t\{\n(.*?)^\t\}$", re.S | re.M)
_BYTE = re.compile(r"^\.b8 (\d+)\b")


def _debug_info_strings(match: re.Match[str]) -> str:
    """A PTX ``.debug_info`` section spells its strings (the producer, the source file and the folder it
    was compiled in) as ``.b8`` byte lines, with lengths and offsets that follow the folder's length:
    kept as its decoded strings, one per line, so that the folder's path can be normalised."""
    strings, current = [], []
    for line in match.group(1).split("\n"):
        m = _BYTE.match(line)
        byte = int(m.group(1)) if m else None
        if byte is not None and 32 <= byte < 127:
            current.append(chr(byte))
            continue
        if byte == 0 and len(current) >= 2:
            strings.append("".join(current))
        current = []
    body = "".join(f"// debug_info string: {x}\n" for x in strings)
    return f"\t.section\t.debug_info\n\t{{\n{body}\t}}"


# PTX global byte arrays (a device assert's file name): `.b8 assertFile_0[105] = {47, 116, ...};`
_PTX_BYTES = re.compile(r"(\.b8 \w+)\[\d+\] = \{([\d, ]+)\}")
# LLVM IR string constants: `[105 x i8] c"/tmp/.../x.py\00"` (the length follows the path's)
_LLVM_STRING = re.compile(r"\[\d+ x i8\] c\"")


def _ptx_string(match: re.Match[str]) -> str:
    values = [int(x) for x in match.group(2).replace(" ", "").split(",") if x]
    if values and values[-1] == 0:
        values = values[:-1]
    if not values or not all(32 <= v < 127 for v in values):
        return match.group(0)
    return f'{match.group(1)}[<n>] = "{"".join(map(chr, values))}"'


def normalise_text(text: str) -> str:
    """``text`` with run-specific paths, hashes and addresses replaced by placeholders."""
    if "\t.section\t.debug_info" in text:
        text = _DEBUG_INFO.sub(_debug_info_strings, text)
    if ".b8 " in text:
        text = _PTX_BYTES.sub(_ptx_string, text)
    text = _LLVM_STRING.sub('[<n> x i8] c"', text)
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text


def normalise_kernel_text(text: str, kernel_name: str) -> str:
    """Like normalise_text, and the kernel's own name replaced, for an equality test of two kernels
    whose names differ only by Inductor's numbering."""
    return rename_kernel(normalise_text(text), kernel_name)


def rename_kernel(text: str, kernel_name: str) -> str:
    """``text`` with the kernel's own name replaced by ``<kernel>``."""
    if kernel_name:
        text = re.sub(r"\b" + re.escape(kernel_name) + r"\b", "<kernel>", text)
    return text
