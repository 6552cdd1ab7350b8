"""A bundle's report as text: Markdown, HTML or JSON (``kernelscope report``: commands/report.py)."""

from __future__ import annotations

import json

from kernelscope.bundle.io import read_bundle
from kernelscope.bundle.shards import finite


def render(bundle_path: str, fmt: str, sources: bool = True, every_kernel: bool = False) -> str:
    from kernelscope.report.data import report_data
    from kernelscope.textsafe import printable

    bundle = read_bundle(bundle_path)
    data = report_data(bundle, every_kernel=every_kernel)
    if fmt == "json":  # json.dumps writes every control character as a \u escape; strict JSON: no NaN
        return json.dumps(finite(data), indent=1, allow_nan=False) + "\n"
    # A report is printed to a terminal as often as pasted: whatever a bundle or a trace named (a kernel,
    # a compile phase, a function) reaches it without escape sequences, whichever section it is in.
    if fmt == "html":
        from kernelscope.report.html import render_html

        return printable(render_html(data, bundle, sources=sources))
    from kernelscope.report.markdown import render_markdown

    return printable(render_markdown(data))

