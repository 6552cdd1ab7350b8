"""Command palette (ctrl+p): every key of the current screen as a command, plus 'Kernel: NAME' to
jump to any kernel and 'Capture sample: NAME' from the gallery."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kernelscope.ui.capture_request import CaptureRequest


class KernelscopeCommands(Provider):
    def _commands(self) -> list[tuple[str, str, object]]:
        screen = self.screen
        out: list[tuple[str, str, object]] = []
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            b = active.binding
            if not b.description or b.action in seen or not active.enabled:
                continue
            seen.add(b.action)
            shown = b.key_display or self.app.get_key_display(b)
            out.append((b.description, f"key: {shown}", partial(self.app.run_action, b.action, active.node)))
        kernels = getattr(screen, "index", None)
        if kernels is not None and hasattr(screen, "select_kernel"):
            for k in kernels.kernels_in_order():
                out.append((f"Kernel: {k.name}", f"{k.kind} · graph {k.graph}", partial(screen.select_kernel, k)))
        for t in getattr(screen, "samples", []):
            out.append((f"Capture sample: {t.name}", t.description,
                        partial(self.app.run_capture, CaptureRequest.for_target(t))))
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)

