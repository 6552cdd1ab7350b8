"""Every MLIR (and LLVM) pass of a Triton compile: parsing the dumps, storing them compactly, diffs.

MLIR_ENABLE_DUMP prints the IR *before* each pass, so a pass's "after" is the next dump (Triton
prints the whole module each time; for a dump of one function, the next dump of that function, or the
function cut out of the next module dump). LLVM_IR_ENABLE_DUMP prints the IR *after* each pass, so there "before" is the
previous dump. The last MLIR pass has no after (the next stage is LLVM IR, a different language).

A dump file can hold several compiles (one per autotune config); it is split into runs, each starting
where the first header repeats. On disk a pass log is ``passes.json`` (the index) plus ``texts/``
with one gzip per distinct IR text, named by its hash, read only when a pass is opened.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelscope.bundle.io import bundle_path
from kernelscope.bundle.model import Bundle, Kernel, TritonVariant
from kernelscope.pipeline.stages import pick_variant

INDEX_NAME = "passes.json"
TEXTS_DIR = "texts"
FORMAT = "kernelscope.passes"
FORMAT_VERSION = 1

# triton 3.6: "Before Canonicalizer (canonicalize) ('tt.func' operation: @f)";
# triton 3.9: "Before CanonicalizerPass: canonicalize{max-iterations=10 ...} ('tt.func' operation: @f)".
_MLIR_HEADER = re.compile(
    r"^// -----// IR Dump Before (?P<name>[^\s:(]+)(?: \((?P<arg>[^)]*)\)|: (?P<arg2>[^\s{(]*)(?:\{.*?\})?)?"
    r" \('(?P<op>[^']+)' operation(?:: (?P<sym>.*?))?\) //----- //\s*$",
    re.M,
)
# New pass manager: "; *** IR Dump After InstCombinePass on f ***"; the legacy codegen pipeline:
# "*** IR Dump After Global Value Numbering (gvn) ***" (IR) and "# *** IR Dump After ... ***:" (machine IR).
_LLVM_HEADER = re.compile(
    r"^(?P<mark>[;#] )?\*\*\* IR Dump (?P<when>After|Before) (?P<name>.+?)(?: \((?P<arg>[\w.-]+)\))?"
    r"(?: on (?P<scope>.+?))? \*\*\*:?\s*$",
    re.M,
)
# LLVM's pass-manager chatter interleaved with its dumps on stderr.
_LLVM_NOISE = re.compile(
    r"^(Running pass|Running analysis|Invalidating analysis|Invalidating all|Clearing all|"
    r"Skipping pass|Skipped pass)\b.*$\n?",
    re.M,
)
_LOC_SUFFIX = re.compile(r"\s*loc\((?:[^()\"]|\"(?:[^\"\\]|\\.)*\"|\((?:[^()\"]|\"[^\"]*\"|\([^()]*\))*\))*\)")


def strip_locs(text: str) -> str:
    """The IR without ``#loc`` definitions and ``loc(...)`` suffixes: what a user compares across passes."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("#loc")]
    return "\n".join(_LOC_SUFFIX.sub("", ln) for ln in lines)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class TextStore:
    """IR texts by key: in memory after parsing, or read lazily from a ``texts/`` folder."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self._texts: dict[str, str] = {}

    def put(self, text: str) -> str:
        key = text_key(text)
        self._texts.setdefault(key, text)
        return key

    def get(self, key: str | None) -> str | None:
        if key is None:
            return None
        if key not in self._texts:
            if self.folder is None:
                raise KeyError(key)
            with gzip.open(self.folder / f"{key}.txt.gz", "rt", encoding="utf-8") as fh:
                self._texts[key] = fh.read()
        return self._texts[key]

    @property
    def loaded(self) -> int:
        return len(self._texts)


@dataclass
class PassRecord:
    """One pass: its name, what it ran on, and keys of the IR before and after it."""

    index: int
    name: str
    arg: str  # the pass's command-line name (MLIR) or "" (LLVM)
    scope: str  # "builtin.module", "tt.func @f", "[module]", or an LLVM function name
    kind: str  # "mlir", "llvm" or "mir" (LLVM machine passes)
    stage: str  # the IR it works on: "ttir", "ttgir", "llvm-mlir", "llir", "mir"
    before: str | None = None
    after: str | None = None
    changed: bool | None = None  # None when one side is unknown


@dataclass
class PassLog:
    """The passes of one compile, in order."""

    kind: str  # "mlir" or "llvm"
    passes: list[PassRecord]
    store: TextStore = field(repr=False)
    label: str = ""  # e.g. "num_warps=4"
    origin: str = ""  # where it was read from

    def text(self, key: str | None) -> str | None:
        return self.store.get(key)

    def before(self, p: PassRecord) -> str | None:
        return self.store.get(p.before)

    def after(self, p: PassRecord) -> str | None:
        return self.store.get(p.after)

    def changed_only(self) -> list[PassRecord]:
        return [p for p in self.passes if p.changed]

    def diff(self, p: PassRecord, locs: bool = False, context: int = 3) -> str:
        """Unified diff of the IR before and after ``p`` (``loc`` noise stripped unless ``locs``)."""
        before, after = self.before(p), self.after(p)
        if before is None or after is None:
            side = "before" if before is None else "after"
            return f"(no IR {side} {p.name}: {_why_missing(self, p, side)})"
        if not locs and self.kind == "mlir":
            before, after = strip_locs(before), strip_locs(after)
        lines = difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"before {p.name}", f"after {p.name}", n=context, lineterm=""
        )
        return "\n".join(lines)


def _why_missing(log: PassLog, p: PassRecord, side: str) -> str:
    if log.kind == "mlir" and side == "after":
        return "MLIR dumps the IR before each pass; the last one's output is lowered straight to LLVM IR"
    return "LLVM dumps the IR after each pass; the first pass's input is the translated LLVM IR"


def _mlir_stage(text: str) -> str:
    if "llvm.func" in text:
        return "llvm-mlir"
    if "ttg." in text:
        return "ttgir"
    return "ttir"


def _extract_block(text: str, start_pattern: re.Pattern) -> str | None:
    """A function cut out of a module's text: its header line down to the brace closing it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if start_pattern.search(line):
            indent = len(line) - len(line.lstrip())
            for j in range(i + 1, len(lines)):
                ln = lines[j]
                if ln.strip().startswith("}") and len(ln) - len(ln.lstrip()) == indent:
                    block = lines[i : j + 1]
                    return "\n".join(b[indent:] for b in block)
            return None
    return None


def _mlir_func_text(module_text: str, symbol: str) -> str | None:
    sym = symbol.strip().lstrip("@")
    return _extract_block(module_text, re.compile(r"\bfunc\b.*@" + re.escape(sym) + r"\("))


def _llvm_func_text(module_text: str, name: str) -> str | None:
    return _extract_block(module_text, re.compile(r"^define\b.*@" + re.escape(name.strip()) + r"\("))


_OTHER_DUMP = re.compile(r"^// -----// ", re.M)


def _split(text: str, header: re.Pattern, cut_other: bool = False) -> list[tuple[re.Match, str]]:
    matches = list(header.finditer(text))
    out = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[m.end() : end]
        if cut_other:  # e.g. "SoftwarePipeliner internal IR Dump After: LowerLoops" (not a pass)
            other = _OTHER_DUMP.search(body)
            body = body[: other.start()] if other else body
        out.append((m, body.strip("\n") + "\n"))
    return out


_MODULE_LINE = re.compile(r"^module\b", re.M)


def _mlir_arg(m: re.Match) -> str:
    return m.group("arg") or m.group("arg2") or ""


def _op_scope(m: re.Match) -> str:
    return m.group("op") + (" " + m.group("sym").strip() if m.group("sym") else "")


def parse_mlir_dump(text: str, origin: str = "") -> list[PassLog]:
    """The passes of every compile in an MLIR_ENABLE_DUMP output, one PassLog per compile."""
    dumps = _split(text, _MLIR_HEADER, cut_other=True)
    runs: list[list[tuple[re.Match, str]]] = []
    first_sig = None
    for m, body in dumps:
        sig = (m.group("name"), _mlir_arg(m), _op_scope(m))
        if first_sig is None:
            first_sig = sig
        if sig == first_sig or not runs:
            runs.append([])
        runs[-1].append((m, body))
    logs = []
    for run in runs:
        store = TextStore()
        passes = []
        for i, (m, body) in enumerate(run):
            scope = _op_scope(m)
            passes.append(
                PassRecord(
                    index=i,
                    name=m.group("name"),
                    arg=_mlir_arg(m),
                    scope=scope,
                    kind="mlir",
                    stage=_mlir_stage(body),
                    before=store.put(body),
                )
            )
        for i, p in enumerate(passes):
            p.after = _mlir_after(run, i, store)
            p.changed = _changed(store, p, "mlir")
        nw = re.search(r'"ttg\.num-warps" = (\d+)', run[-1][1])
        logs.append(PassLog("mlir", passes, store, label=f"num_warps={nw.group(1)}" if nw else "", origin=origin))
    return logs


def _mlir_after(run: list[tuple[re.Match, str]], i: int, store: TextStore) -> str | None:
    m, body = run[i]
    if _MODULE_LINE.search(body):
        # Triton prints the whole module before every pass, whatever the pass's anchor.
        return store.put(run[i + 1][1]) if i + 1 < len(run) else None
    scope = _op_scope(m)
    for m2, body2 in run[i + 1 :]:
        scope2 = _op_scope(m2)
        if scope2 == scope:
            return store.put(body2)
        if m.group("sym") and scope2 == "builtin.module":
            func = _mlir_func_text(body2, m.group("sym"))
            return store.put(func + "\n") if func is not None else None
    return None


def _changed(store: TextStore, p: PassRecord, kind: str) -> bool | None:
    if p.before is None or p.after is None:
        return None
    if p.before == p.after:
        return False
    a, b = store.get(p.before), store.get(p.after)
    if kind == "mlir":
        a, b = strip_locs(a), strip_locs(b)
    return a.strip() != b.strip()


def parse_llvm_dump(text: str, origin: str = "") -> PassLog:
    """The LLVM (and machine) passes of an LLVM_IR_ENABLE_DUMP stderr capture."""
    text = _LLVM_NOISE.sub("", text)
    store = TextStore()
    passes: list[PassRecord] = []
    last_by_scope: dict[tuple[str, str], str] = {}
    last_module: str | None = None
    for i, (m, body) in enumerate(_split(text, _LLVM_HEADER)):
        kind = "mir" if (m.group("mark") or "").startswith("#") else "llvm"
        scope = m.group("scope") or ("[machine function]" if kind == "mir" else "[codegen]")
        key = store.put(body)
        p = PassRecord(
            index=i,
            name=m.group("name"),
            arg=m.group("arg") or "",
            scope=scope,
            kind=kind,
            stage="mir" if kind == "mir" else "llir",
        )
        if m.group("when") == "Before":
            p.before = key
        else:
            p.after = key
            prev = last_by_scope.get((kind, scope))
            if prev is None and kind == "llvm" and last_module is not None and not scope.startswith("["):
                func = _llvm_func_text(store.get(last_module), scope.strip("()").split(",")[0])
                prev = store.put(func + "\n") if func is not None else None
            p.before = prev
            last_by_scope[(kind, scope)] = key
            if kind == "llvm" and scope == "[module]":
                last_module = key
        p.changed = _changed(store, p, "llvm")
        passes.append(p)
    return PassLog("llvm", passes, store, origin=origin)


# ------------------------------------------------------------------------------------------- storage


def write_pass_logs(logs: list[PassLog], folder: Path) -> Path:
    """Write logs into ``folder`` (index + one gzip per distinct text); returns the index path."""
    folder = Path(folder)
    texts = folder / TEXTS_DIR
    texts.mkdir(parents=True, exist_ok=True)
    for log in logs:
        for p in log.passes:
            for key in (p.before, p.after):
                target = texts / f"{key}.txt.gz"
                if key is not None and not target.exists():
                    with gzip.open(target, "wt", encoding="utf-8", compresslevel=6) as fh:
                        fh.write(log.store.get(key))
    index = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "logs": [
            {"kind": log.kind, "label": log.label, "origin": log.origin, "passes": [asdict(p) for p in log.passes]}
            for log in logs
        ],
    }
    path = folder / INDEX_NAME
    path.write_text(json.dumps(index, indent=0), encoding="utf-8")
    return path


def read_pass_logs(folder: Path) -> list[PassLog]:
    """Pass logs written by ``write_pass_logs``; texts are read when first asked for."""
    folder = Path(folder)
    index_path = folder / INDEX_NAME if folder.is_dir() else folder
    folder = index_path.parent
    data = json.loads(index_path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT or data.get("version", 0) > FORMAT_VERSION:
        raise ValueError(f"{index_path}: not a kernelscope pass log this version reads")
    store = TextStore(folder / TEXTS_DIR)
    return [
        PassLog(
            d["kind"],
            [PassRecord(**p) for p in d["passes"]],
            store,
            label=d.get("label", ""),
            origin=d.get("origin", ""),
        )
        for d in data["logs"]
    ]


def load_pass_file(path: Path) -> list[PassLog]:
    """Pass logs from a stored index, or from a raw MLIR_ENABLE_DUMP / LLVM dump text file."""
    path = Path(path)
    if path.is_dir() or path.name == INDEX_NAME:
        return read_pass_logs(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    if _MLIR_HEADER.search(text):
        return parse_mlir_dump(text, origin=str(path))
    return [parse_llvm_dump(text, origin=str(path))]


def select_log(logs: list[PassLog], variant: TritonVariant | None, kind: str = "mlir") -> PassLog | None:
    """The log of one kind that belongs to the variant (matched on num_warps when there are several)."""
    candidates = [log for log in logs if log.kind == kind]
    if len(candidates) > 1 and variant is not None and variant.metadata.get("num_warps") is not None:
        wanted = f"num_warps={variant.metadata['num_warps']}"
        matching = [log for log in candidates if log.label == wanted]
        candidates = matching or candidates
    return candidates[-1] if candidates else None


def stored_passes(bundle: Bundle, kernel: Kernel, variant: TritonVariant | str | int | None = None) -> list[PassLog]:
    """Pass logs captured with the bundle (a variant's ``files["passes"]``), or [] when there are none."""
    chosen = pick_variant(kernel, variant)
    rel = chosen.files.get("passes") if chosen else None
    if not rel:
        return []
    return load_pass_file(bundle_path(bundle, rel))


def recompute_passes(
    bundle: Bundle,
    kernel: Kernel,
    out_dir: Path | None = None,
    arch: str | int | None = None,
    variant: TritonVariant | str | int | None = None,
) -> list[PassLog]:
    """Compile the kernel again in a child process with pass dumps on; store and return its pass logs.

    The result is kept in ``out_dir`` (default: kernelscope's cache), and read back from there on
    the next call instead of compiling again.
    """
    from kernelscope.pipeline.compile import compile_kernel, parse_arch, variant_arch, work_dir_for

    chosen = pick_variant(kernel, variant)
    cc = parse_arch(arch) if arch is not None else variant_arch(chosen)
    folder = Path(out_dir) if out_dir is not None else work_dir_for(bundle, kernel, chosen, cc or 0, "passes")
    if (folder / INDEX_NAME).is_file():
        return read_pass_logs(folder)
    result = compile_kernel(bundle, kernel, arch=cc, variant=chosen, out_dir=folder / "compile", dump_passes=True)
    logs = []
    if result.mlir_dump is not None:
        logs += parse_mlir_dump(
            result.mlir_dump.read_text(encoding="utf-8", errors="replace"),
            origin=f"recomputed for sm_{result.arch}, triton {result.triton_version}",
        )
    if result.llvm_dump is not None:
        llvm = parse_llvm_dump(
            result.llvm_dump.read_text(encoding="utf-8", errors="replace"),
            origin=f"recomputed for sm_{result.arch}, triton {result.triton_version}",
        )
        if llvm.passes:
            logs.append(llvm)
    write_pass_logs(logs, folder)
    # The raw dumps are large and now stored compactly beside the index.
    for raw in (result.mlir_dump, result.llvm_dump):
        if raw is not None:
            raw.unlink(missing_ok=True)
    return read_pass_logs(folder)
