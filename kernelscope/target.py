"""Targets ("add_relu", "path/to/file.py::fn") and input specs ("f32[4096, 1024], f32[1024] grad").

Pure Python: targets are checked statically (``ast``), so a typo fails in milliseconds with one
line, before any child process or torch import.

Inputs convention: a target ``fn`` takes its inputs from, in order of preference, ``--args``;
a function ``fn_inputs(device)`` defined next to it in the same file; a module-level
``example_inputs(device)``. Each returns a tuple of arguments. A sample may also set
``OPTIONS = {...}`` (e.g. ``{"backward": True}``) as its default capture options.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DTYPES = {
    "f32": "float32", "float32": "float32", "float": "float32",
    "f16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "f64": "float64", "float64": "float64", "double": "float64",
    "i32": "int32", "int32": "int32", "i64": "int64", "int64": "int64", "long": "int64",
    "i16": "int16", "int16": "int16", "i8": "int8", "int8": "int8", "u8": "uint8", "uint8": "uint8",
    "bool": "bool", "b8": "bool",
}


class TargetError(Exception):
    """A bad target or input spec; the message is one line for the user."""


@dataclass
class TensorSpec:
    dtype: str  # torch dtype name: float32, bfloat16, ...
    shape: list[int]
    requires_grad: bool = False
    low: int | None = None  # integer tensors: values drawn from [low, high)
    high: int | None = None

    def __str__(self) -> str:
        short = {v: k for k, v in DTYPES.items() if len(k) <= 4 and k not in ("long", "half", "bool")}
        name = short.get(self.dtype, self.dtype) if self.dtype != "bool" else "bool"
        rng = f" {self.low}..{self.high}" if self.low is not None else ""
        return f"{name}[{', '.join(map(str, self.shape))}]" + rng + (" grad" if self.requires_grad else "")


# Integer tensors without a range draw from [0, 100): token ids and indices are non-negative.
DEFAULT_INT_RANGE = (0, 100)
INT_BOUNDS = {"int64": (-2**63, 2**63), "int32": (-2**31, 2**31), "int16": (-2**15, 2**15), "int8": (-128, 128),
              "uint8": (0, 256)}


@dataclass
class ScalarSpec:
    value: Any

    def __str__(self) -> str:
        return repr(self.value)


@dataclass
class Target:
    spec: str  # as the user wrote it
    file: str  # absolute path of the Python file
    name: str  # function or nn.Module class name
    is_class: bool = False
    is_sample: bool = False
    first_line: int | None = None
    last_line: int | None = None
    has_inputs_factory: bool = False
    sample_options: dict[str, Any] = field(default_factory=dict)
    description: str = ""


_SPEC = re.compile(
    r"^\s*(?P<dtype>[A-Za-z][A-Za-z0-9]*)\s*\[(?P<shape>[^\]]*)\]"
    r"(?:\s*\[[^\]]*\])?"  # an FX stride, as printed in graphs: f32[16][1]
    r"(?:\s*(?:cuda|cpu)(?::\d+)?)?"  # an FX device suffix
    r"(?P<range>\s+\S*\.\.\S*)?"  # integer tensors: a value range, low..high (high excluded)
    r"(?P<grad>\s+(?:grad|requires_grad))?\s*$"
)
_RANGE = re.compile(r"^([-+]?\d+)\.\.([-+]?\d+)$")


def _parse_range(i: int, item: str, dtype: str, text: str) -> tuple[int, int]:
    m = _RANGE.match(text)
    if not m:
        raise TargetError(f"--args item {i} {item!r}: range {text!r} is not LOW..HIGH with integers, e.g. 0..50257")
    if dtype not in INT_BOUNDS:
        raise TargetError(f"--args item {i} {item!r}: a value range is for integer tensors (i64, i32, i16, i8, u8), "
                          f"not {dtype}")
    low, high = int(m.group(1)), int(m.group(2))
    if low >= high:
        raise TargetError(f"--args item {i} {item!r}: empty range {text}; LOW..HIGH draws from [LOW, HIGH), "
                          "so HIGH must be greater than LOW")
    lo, hi = INT_BOUNDS[dtype]
    if low < lo or high > hi:
        raise TargetError(f"--args item {i} {item!r}: range {text} does not fit {dtype} ([{lo}, {hi}))")
    return low, high


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def parse_args_spec(text: str) -> list[TensorSpec | ScalarSpec]:
    """Parse ``--args``: tensors as FX prints them, plus plain numbers and booleans."""
    if not text or not text.strip():
        raise TargetError('empty --args; give input shapes like --args "f32[4096, 1024], f32[1024]"')
    specs: list[TensorSpec | ScalarSpec] = []
    for i, raw in enumerate(_split_top(text), start=1):
        item = raw.strip()
        if not item:
            raise TargetError(f"--args item {i} is empty; separate inputs with single commas")
        m = _SPEC.match(item)
        if m:
            dtype = DTYPES.get(m.group("dtype").lower())
            if dtype is None:
                raise TargetError(
                    f"--args item {i} {item!r}: unknown dtype {m.group('dtype')!r}; use one of f32, f16, bf16, f64, "
                    "i64, i32, i16, i8, u8, bool"
                )
            shape = []
            for dim in m.group("shape").split(","):
                dim = dim.strip()
                if not dim:
                    continue
                if not (dim.isascii() and dim.isdigit()):  # not "８": int() takes any script's digits
                    raise TargetError(f"--args item {i} {item!r}: size {dim!r} is not a non-negative integer")
                shape.append(int(dim))
            grad = bool(m.group("grad"))
            if grad and dtype not in ("float32", "float16", "bfloat16", "float64"):
                raise TargetError(f"--args item {i} {item!r}: only floating-point tensors can require grad")
            spec = TensorSpec(dtype=dtype, shape=shape, requires_grad=grad)
            if m.group("range"):
                spec.low, spec.high = _parse_range(i, item, dtype, m.group("range").strip())
            specs.append(spec)
            continue
        if re.fullmatch(r"[-+]?\d+", item):
            specs.append(ScalarSpec(int(item)))
        elif re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", item):
            specs.append(ScalarSpec(float(item)))
        elif item in ("True", "False"):
            specs.append(ScalarSpec(item == "True"))
        else:
            raise TargetError(
                f"--args item {i} {item!r} is not a tensor spec; write dtype[sizes], e.g. f32[4096, 1024] "
                "(add ' grad' for requires_grad, ' 0..50257' for an integer range)"
            )
    return specs


def parse_calls(text: str) -> list[list[TensorSpec | ScalarSpec]]:
    """Several calls, separated by ';': "f32[8]; f32[16]" calls the compiled function twice, so
    recompiles (a new shape, a new dtype) show up in the capture with their guard failures."""
    calls = [part for part in text.split(";")]
    if len(calls) > 1 and any(not c.strip() for c in calls):
        raise TargetError("--args has an empty call between ';'; write \"f32[8]; f32[16]\"")
    return [parse_args_spec(c) for c in calls]


def spec_dicts(specs: list[TensorSpec | ScalarSpec]) -> list[dict[str, Any]]:
    """Specs as the JSON a child process reads to make the inputs of one call."""
    out: list[dict[str, Any]] = []
    for a in specs:
        if isinstance(a, ScalarSpec):
            out.append({"value": a.value})
            continue
        d: dict[str, Any] = {"dtype": a.dtype, "shape": a.shape, "requires_grad": a.requires_grad}
        if a.dtype in INT_BOUNDS:
            d["low"], d["high"] = (a.low, a.high) if a.low is not None else DEFAULT_INT_RANGE
        out.append(d)
    return out


def samples_dir() -> Path:
    env = os.environ.get("KERNELSCOPE_SAMPLES")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parent
    installed = package / "samples"  # a wheel ships them inside the package (pyproject maps the folder)
    return installed if installed.is_dir() else package.parent / "samples"  # a checkout: top of the repo


# A sample of several files is a folder NAME/ whose entry file defines NAME (a function, a class,
# or an alias to one: ``tiny_gpt = TinyGPT``); the entry imports the folder's other files.
SAMPLE_ENTRY = "model.py"


def _sample_file(name: str) -> Path | None:
    folder = samples_dir()
    for path in (folder / f"{name}.py", folder / name / SAMPLE_ENTRY):
        if path.is_file():
            return path
    return None


def list_samples() -> list[Target]:
    folder = samples_dir()
    out = []
    names = [p.stem for p in folder.glob("*.py")] + [p.parent.name for p in folder.glob(f"*/{SAMPLE_ENTRY}")]
    for name in sorted(set(names)):
        path = _sample_file(name)
        if name.startswith("_") or path is None:
            continue
        try:
            out.append(_resolve_file(str(path), name, spec=name, is_sample=True))
        except TargetError:
            continue
    return out


def resolve_target(spec: str) -> Target:
    """A sample name or ``file.py::name``; checked without running the file."""
    spec = spec.strip()
    if not spec:
        raise TargetError("no target; give a sample name (see `kernelscope samples`) or path/to/file.py::function")
    if "::" in spec:
        file, _, name = spec.rpartition("::")
        if not name:
            raise TargetError(f"{spec}: nothing after '::'; write path/to/file.py::function")
        return _resolve_file(file, name, spec=spec)
    if spec.endswith(".py") or os.sep in spec:
        if not Path(spec).expanduser().exists():
            raise TargetError(f"{spec}: no such file or folder; give a sample name or path/to/file.py::function")
        if Path(spec).expanduser().is_dir():
            raise TargetError(f"{spec} is a folder, not a target; open a bundle folder with `kernelscope {spec}`, "
                              "or give path/to/file.py::function")
        raise TargetError(f"{spec}: name the function too, as {spec}::function")
    sample = _sample_file(spec)
    if sample is not None:
        return _resolve_file(str(sample), spec, spec=spec, is_sample=True)
    names = ", ".join(t.name for t in list_samples())
    raise TargetError(f"no sample named {spec!r}; samples: {names} (or use path/to/file.py::function)")


def _resolve_file(file: str, name: str, *, spec: str, is_sample: bool = False) -> Target:
    path = Path(file).expanduser()
    if not path.is_file():
        raise TargetError(f"{file}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"{file}: cannot read it ({exc.__class__.__name__})") from exc
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise TargetError(f"{file}:{exc.lineno}: syntax error: {exc.msg}") from exc
    defs = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    defs.setdefault(t.id, node)
    node = defs.get(name)
    if node is None:
        funcs = [n for n, d in defs.items() if isinstance(d, (ast.FunctionDef, ast.ClassDef)) and not n.startswith("_")]
        raise TargetError(f"{file}: no function or class named {name!r}; found: {', '.join(funcs) or 'none'}")
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
            isinstance(defs.get(node.value.id), (ast.FunctionDef, ast.ClassDef)):
        node = defs[node.value.id]  # an alias: tiny_gpt = TinyGPT
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    target = Target(
        spec=spec, file=str(path.resolve()), name=name, is_class=isinstance(node, ast.ClassDef),
        is_sample=is_sample, first_line=first, last_line=getattr(node, "end_lineno", None),
        has_inputs_factory=f"{name}_inputs" in defs or "example_inputs" in defs,
    )
    doc = ast.get_docstring(tree) or ""
    target.description = doc.strip().split("\n")[0] if doc else ""
    options = defs.get("OPTIONS")
    if isinstance(options, ast.Assign):
        target.sample_options = check_options(options.value, f"{file}:{options.lineno}")
    return target


# What a file's OPTIONS dict may set, and what each value must be.
_OPTION_CHECKS: dict[str, tuple[str, Any]] = {
    "mode": ("one of default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs",
             lambda v: v in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")),
    "dynamic": ("True, False or None", lambda v: v is None or isinstance(v, bool)),
    "fullgraph": ("True or False", lambda v: isinstance(v, bool)),
    "backward": ("True or False", lambda v: isinstance(v, bool)),
    "device": ('"cuda", "cpu" or None', lambda v: v in (None, "cuda", "cpu")),
    "no_grad": ("True or False", lambda v: isinstance(v, bool)),
    "inference_mode": ("True or False", lambda v: isinstance(v, bool)),
    "eval": ("True or False", lambda v: isinstance(v, bool)),
    "args": ('an --args spec string like "f32[1024], i64[8] 0..100"', lambda v: isinstance(v, str) and bool(v.strip())),
}


def check_options(node: ast.expr, where: str) -> dict[str, Any]:
    """A file's ``OPTIONS = {...}``, checked: a literal dict of known keys with valid values, else a
    TargetError naming OPTIONS and the bad key (the function is not to blame: it never ran)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise TargetError(f"{where}: OPTIONS must be a literal dict like {{\"backward\": True}} "
                          f"({exc.__class__.__name__})") from exc
    if not isinstance(value, dict):
        raise TargetError(f"{where}: OPTIONS must be a dict like {{\"backward\": True}}, not {type(value).__name__}")
    for key, v in value.items():
        check = _OPTION_CHECKS.get(key) if isinstance(key, str) else None
        if check is None:
            raise TargetError(f"{where}: OPTIONS has unknown key {key!r}; known: {', '.join(_OPTION_CHECKS)}")
        if not check[1](v):
            raise TargetError(f"{where}: OPTIONS[{key!r}] is {v!r}; it must be {check[0]}")
    return value
