"""Reports and diffs of bundles: Markdown, HTML and JSON for reviews, and kernel-by-kernel comparison."""
