"""Pygments lexers for Triton's MLIR (TTIR/TTGIR) and NVIDIA SASS, and a lexer per pipeline stage.

Pygments ships LLVM, PTX, Python and C++ lexers but none for MLIR or SASS. Nothing is registered
globally: ``lexer_for_stage`` hands out instances.
"""

from __future__ import annotations

from pygments.lexer import Lexer, RegexLexer, bygroups, default, include
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace


class MlirLexer(RegexLexer):
    """MLIR as Triton prints it: dialect ops, %values, #attributes, !types, tensor<...>, loc(...)."""

    name = "MLIR"
    aliases = ["mlir-ks"]
    filenames = []

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            # Debug locations are noise while reading IR: show them as comments.
            (r"\bloc\(", Comment.Special, "loc"),
            (r"#loc\d*\s*=", Comment.Special, "locdef"),
            (r'"(?:[^"\\]|\\.)*"', String),
            (r"%[\w.$-]+(?:#\d+)?", Name.Variable),
            (r"\^[\w.$-]+", Name.Label),
            (r"@[\w.$-]+|@\"(?:[^\"\\]|\\.)*\"", Name.Function),
            (r"#[\w.$-]+(?:<)?", Name.Attribute),
            (r"!tt\.ptr|![\w.$-]+", Keyword.Type),
            (r"\b(?:tensor|memref|vector|ptr)(?=<)", Keyword.Type),
            (r"\b(?:[iuf]\d+|bf16|f8E\w+|tf32|index|none)\b", Keyword.Type),
            (r"\b[a-z_][\w]*\.[\w.]+\b", Keyword),  # dialect.op: tt.load, arith.addf, ttg.convert_layout
            (r"\b(?:module|attributes|true|false|dense|to|at|x)\b", Keyword.Reserved),
            (r"0x[0-9a-fA-F]+|-?\d+\.\d*(?:e[+-]?\d+)?|-?\d+", Number),
            (r"->|=|:|\*", Operator),
            (r"[()\[\]{}<>,]", Punctuation),
            (r"[\w.$-]+", Text),
            (r".", Text),
        ],
        "loc": [
            (r"\(", Comment.Special, "#push"),
            (r"\)", Comment.Special, "#pop"),
            (r'"(?:[^"\\]|\\.)*"', Comment.Special),
            (r'[^()"]+', Comment.Special),
        ],
        "locdef": [
            (r"\s+", Whitespace),
            (r"loc\(", Comment.Special, "loc"),
            (r"(?=\n)", Whitespace, "#pop"),
            (r".", Comment.Special),
            default("#pop"),
        ],
    }


class SassLexer(RegexLexer):
    """NVIDIA SASS as nvdisasm/cuobjdump print it: /*addr*/, @P0, OPCODE.MODS, R/UR/P registers, c[][]."""

    name = "SASS"
    aliases = ["sass-ks"]
    filenames = []

    tokens = {
        "root": [
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            (r"//##.*?$", Comment.Preproc),  # line info
            (r"//.*?$", Comment.Single),
            (r"(/\*)([0-9a-f]{4,})(\*/)", bygroups(Comment.Special, Number.Hex, Comment.Special), "insn"),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"\.[\w.]+", Keyword.Pseudo),  # directives: .section .text...
            (r"[\w.$]+:", Name.Label),
            (r'"[^"]*"', String),
            (r"@?[\w.$\"]+", Text),
            (r".", Text),
        ],
        "insn": [
            (r"[ \t]+", Whitespace),
            (r"@!?U?P[T0-9]+", Name.Builtin.Pseudo),  # predicate guard
            (r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*", Keyword, "operands"),
            (r"\n", Whitespace, "#pop"),
        ],
        "operands": [
            (r"[ \t]+", Whitespace),
            (r";", Punctuation),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"\n", Whitespace, "#pop:2"),
            include("operand"),
        ],
        "operand": [
            (r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]", Name.Constant),  # constant bank
            (r"desc\[[\w]+\]", Name.Constant),
            (r"!?\bU?P(?:T|[0-9]+)\b", Name.Builtin.Pseudo),  # predicate registers
            (r"-?\|?\bU?R(?:Z|[0-9]+)\b(?:\.(?:reuse|64|H0|H1|B\d|X4|F32))*\|?", Name.Variable),  # registers
            (r"\bSR_[\w.]+", Name.Builtin),
            (r"-?0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[+-]?INF|QNAN", Number),
            (r"`\([^)]*\)|\.L_[\w]+", Name.Label),
            (r"[\[\]{}(),+|~-]", Punctuation),
            (r"[\w.]+", Name),
        ],
    }


def lexer_for_stage(stage: str) -> Lexer:
    """A fresh Pygments lexer for an artifact of kernelscope/bundle/artifacts.py ("ttir", "sass" ...)
    or a language ("python", "mlir", "cpp" ...); plain text for anything else."""
    from pygments.lexers import CppLexer, JsonLexer, LlvmLexer, PtxLexer, PythonLexer, TextLexer

    from kernelscope.bundle.artifacts import BY_NAME

    languages = {
        "python": PythonLexer,
        "mlir": MlirLexer,
        "llvm": LlvmLexer,
        "ptx": PtxLexer,
        "sass": SassLexer,
        "cpp": CppLexer,
        "json": JsonLexer,
    }
    art = BY_NAME.get(stage)
    return languages.get(art.lexer if art else stage, TextLexer)()
