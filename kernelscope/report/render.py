"""A bundle's report as text: Markdown, HTML or JSON (``kernelscope report``: commands/report.py)."""

from __future__ import annotations

import json

from kernelscope.bundle.io import read_bundle


def render(bundle_path: str, fmt: str, sources: bool = True) -> str:
    from kernelscope.report.data import report_data

    bundle = read_bundle(bundle_path)
    data = report_data(bundle)
    if fmt == "json":
        return json.dumps(data, indent=1) + "\n"
    if fmt == "html":
        from kernelscope.report.html import render_html

        return render_html(data, bundle, sources=sources)
    from kernelscope.report.markdown import render_markdown

    return render_markdown(data)
