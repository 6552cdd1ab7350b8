"""What a format-5 bundle answers before its kernel file is read (bundle/kernel_file.py leaves its loader in
``_kernel_file``): ``Bundle.kernels`` reads the file on first use; the counts a job's first frame shows
(kernels, their languages, each graph's count and bytes moved, the user lines named) come from the manifest,
and a graph's ``kernel_ids`` from its own rows. Mixed into model.Bundle and model.Graph."""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from typing import Any


class KernelsFromFile:
    """model.Bundle's side of it."""

    def __getattr__(self, name: str) -> Any:  # only called for attributes not set
        if name == "kernels":  # format 5: the kernel file read now
            loader = self.__dict__.get("_kernel_file")
            if loader is not None:
                return loader.load_all()
        raise AttributeError(f"Bundle has no attribute {name!r}")

    @property
    def kernels_read(self) -> bool:
        """False while a format-5 bundle's kernels are still in its kernel file (``kernels`` reads them all)."""
        return "kernels" in self.__dict__ or self.__dict__.get("_kernel_file") is None

    def listed_in_launch_order(self) -> bool:
        """Whether ``kernels`` is known to list graph by graph, each in launch order (a format-5 kernel file
        whose graphs keep no kernel ids of their own), without comparing."""
        loader = self.__dict__.get("_kernel_file")
        return loader is not None and loader.in_launch_order and self.__dict__.get("kernels") is loader.loaded

    def _from_manifest(self) -> Any:
        """The format-5 loader while its manifest answers for the kernels: the file not read yet, or found
        damaged (the list then holds none, and the header still counts what the manifest says); else None."""
        loader = self.__dict__.get("_kernel_file")
        return loader if loader is not None and ("kernels" not in self.__dict__ or loader.failed) else None

    def kernel_count(self) -> int:
        """How many kernels, without reading a format-5 kernel file."""
        loader = self._from_manifest()
        return loader.count if loader is not None else len(self.kernels)

    def kernel_langs(self) -> Counter:
        """The kernels counted by language (triton, cpp, extern), without reading a format-5 kernel file."""
        loader = self._from_manifest()
        return loader.langs() if loader is not None else Counter(map(attrgetter("lang"), self.kernels))

    def recorded_lines(self) -> list:
        """The user lines the kernels name (each kernel's, in order; a format-5 bundle's lines table, without
        reading its kernel file)."""
        if self.kernels_read:
            return [u for k in self.kernels for u in k.user_lines]
        return list(self.__dict__["_kernel_file"].line_table)

    def kernels_of(self, graph_id: str) -> list:
        """The graph's kernels in list order (grouped once per state of ``kernels``: a report asks per graph;
        a format-5 bundle's unread: that graph's rows alone)."""
        if (loader := self._from_manifest()) is not None:  # a graph read before a failure keeps its kernels
            return list(loader.graph(graph_id))
        kernels = self.kernels
        cached = self.__dict__.get("_by_graph")
        if cached is None or cached[0] is not kernels or cached[1] != len(kernels):
            groups: dict[str, list] = {}
            for k in kernels:
                groups.setdefault(k.graph, []).append(k)
            cached = self.__dict__["_by_graph"] = (kernels, len(kernels), groups)
        return list(cached[2].get(graph_id, []))

    def first_graph_with_kernels(self) -> str | None:
        """The id of the first graph that has kernels (counted from a format-5 manifest, unread)."""
        for g in self.graphs:
            summary = self.graph_summary(g.id)
            if (summary[0] if summary else len(self.kernels_of(g.id))) > 0:
                return g.id
        return None

    def graph_summary(self, graph_id: str) -> tuple[int, int | None] | None:
        """(kernel count, bytes moved per call or None) of one graph as a format-5 manifest gives them while
        its kernels are unread; None otherwise (count them)."""
        loader = self.__dict__.get("_kernel_file")
        if loader is None or graph_id in loader.built or self.kernels_read:
            return None
        r = loader.rows.get(graph_id)
        return None if r is None else (r.count, r.moved)


class KernelIdsFromFile:
    """model.Graph's side of it: ``kernel_ids`` are the graph's rows in the kernel file."""

    def __getattr__(self, name: str) -> Any:
        if name == "kernel_ids":
            rows = self.__dict__.get("_kernel_file")
            if rows is not None:
                ids = self.__dict__["kernel_ids"] = [k.id for k in rows.graph(self.id)]
                return ids
        return super().__getattr__(name)

    def __getstate__(self) -> dict[str, Any]:
        if "kernel_ids" not in self.__dict__:
            self.kernel_ids  # noqa: B018 (read from the kernel file before the loader is left behind)
        return {k: v for k, v in super().__getstate__().items() if k != "_kernel_file"}
