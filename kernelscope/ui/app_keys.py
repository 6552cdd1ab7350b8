"""The app's own keys, as a mixin of KernelscopeApp (ui/app.py): theme (t), presentation (P), screenshot
(S), the keys panel (?), quit (asked first when served in a browser), the palette's search icon, and a
talk's steps (space or →, ←, q) with the capture and pane each step opens. The bindings stay on the app:
Textual merges BINDINGS from its own classes only.
"""

from __future__ import annotations


class AppKeys:
    """The app-wide actions; the app sets what they read (talk, talk_index, served, presentation)."""

    # -- app-wide keys ---------------------------------------------------------------------------
    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_presentation(self) -> None:
        """P: the story big (source, kernel, counts) over whatever screen shows a capture; P again leaves."""
        from kernelscope.ui.widgets.presentation import PresentationScreen

        if isinstance(self.screen, PresentationScreen):
            self.presentation = False
            self.pop_screen()
            return
        big = self.presentation_for(self.screen)
        if big is None:  # nothing to show big here (the gallery): P turns the mode on and off
            self.presentation = not self.presentation
            self.notify("presentation mode on: a capture you open shows big (P again: off)" if self.presentation
                        else "presentation mode off", timeout=3)
            return
        self.presentation = True
        self.push_screen(big)

    def presentation_for(self, screen):
        """The presentation of what ``screen`` shows, or None where it shows no capture (gallery, editor)."""
        from kernelscope.ui.widgets.presentation import presentation_for

        heading, note = self._talk_heading()
        return presentation_for(screen, heading, note)

    def action_screenshot(self) -> None:
        """S: an SVG of the screen; served in a browser it is downloaded there (the speaker's machine)."""
        if self.is_web:
            import io

            from textual.app import generate_datetime_filename

            name = generate_datetime_filename("kernelscope", ".svg")
            self.deliver_text(io.StringIO(self.export_screenshot()), save_filename=name, open_method="download",
                              mime_type="image/svg+xml", name="screenshot")
            self.notify(f"screenshot sent to your browser: {name}", timeout=6)
            return
        from kernelscope.ui.paths import screenshots_dir

        path = self.save_screenshot(path=str(screenshots_dir()))
        self.notify(f"screenshot saved: {path}", timeout=6)

    async def action_quit(self) -> None:
        """q / ctrl+q. Served in a browser, ending the session loses the page: ask first."""
        if not self.served:
            await super().action_quit()
            return
        from kernelscope.ui.screens.dialogs import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmScreen("End the session? y/n"), answered)

    def action_command_palette(self) -> None:
        super().action_command_palette()
        self.call_after_refresh(self._plain_search_icon)

    def _plain_search_icon(self) -> None:
        """The palette's 🔎 is an empty box where no emoji font is installed: a plain glyph instead."""
        try:
            from textual.command import SearchIcon
        except ImportError:
            return
        for icon in self.screen.query(SearchIcon):
            icon.icon = ">"

    def action_keys(self) -> None:
        from kernelscope.ui.screens.keys import KeysScreen  # it scrolls: Textual's help panel did not, at 80x24

        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen(self.screen))

    def action_show_help_panel(self) -> None:  # the palette's "Keys": the same panel as ?
        self.action_keys()

    # -- a talk ----------------------------------------------------------------------------------
    def _talk_heading(self) -> tuple[str, str]:
        if self.talk is None:
            return "", ""
        step = self.talk.steps[self.talk_index]
        last = "   (the last step: q ends the talk)" if self.talk_index == len(self.talk.steps) - 1 else ""
        return f"{self.talk_index + 1}/{len(self.talk.steps)} · {step.title}{last}", step.note

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("talk_step", "talk_quit"):
            from textual.screen import ModalScreen
            from textual.widgets import Input

            return self.talk is not None and not isinstance(self.screen, ModalScreen) and \
                not isinstance(self.focused, Input)
        return True

    async def action_talk_step(self, delta: int) -> None:
        if self.talk is None:
            return
        n = self.talk_index + delta
        if not 0 <= n < len(self.talk.steps):
            self.notify("that was the last step: q ends the talk, ← goes back" if n >= len(self.talk.steps)
                        else "this is the first step (space: next)", timeout=4)
            return
        await self.talk_show(n)

    async def action_talk_quit(self) -> None:
        """q in a talk ends it from any step (outside a talk, q is each screen's own back)."""
        await self.action_quit()

    async def talk_show(self, n: int) -> None:
        """Open step N: its capture, at its pane, with its title and note."""
        from kernelscope.bundle.io import BundleError, read_bundle
        from kernelscope.ui.screens.explorer import ExplorerScreen
        from kernelscope.ui.story import find_kernel
        from kernelscope.ui.widgets.presentation import PresentationScreen

        self.talk_index = n
        step = self.talk.steps[n]
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        bundle = self._talk_bundles.get(step.bundle)
        if bundle is None:
            try:
                bundle = read_bundle(step.bundle)
                bundle.kernels  # noqa: B018  (a step finds its kernel among all of them: read here, said in one line)
                self._talk_bundles[step.bundle] = bundle
            except BundleError as exc:
                self.notify(f"step {n + 1}: {exc}", severity="error", timeout=8)
                return
        self.presentation = False
        explorer = ExplorerScreen(bundle)
        await self.push_screen(explorer)
        kernel = find_kernel(explorer.index.kernels_in_order(), step.kernel)
        if step.kernel and kernel is None:
            self.notify(f"step {n + 1}: no kernel named {step.kernel} in {step.bundle.name}", severity="warning")
        heading, note = self._talk_heading()
        if step.pane == "presentation":
            self.presentation = True
            await self.push_screen(PresentationScreen(bundle, kernel, heading=heading, note=note))
            return
        if kernel is not None:
            explorer.select_kernel(kernel)
        if step.pane == "pipeline":
            from kernelscope.ui.screens.tools import PipelineScreen

            if explorer.kernel is None or explorer.kernel.lang != "triton":
                from kernelscope.ui.story import story_kernel

                k = story_kernel(bundle, explorer.index.kernels_in_order())
                if k is not None:
                    explorer.select_kernel(k)
            if explorer.kernel is None or explorer.kernel.lang != "triton":
                self.notify(f"step {n + 1}: no Triton kernel in {step.bundle.name} to step through", severity="warning")
            else:
                await self.push_screen(PipelineScreen(bundle, explorer.kernel))
            await self._talk_banner(heading, note)
            return
        explorer.action_show_pane(step.pane)
        await self._talk_banner(heading, note)

    async def _talk_banner(self, heading: str, note: str) -> None:
        from textual.widgets import Static

        banner = Static(f"{heading}\n{note}" if note else heading, classes="talk-banner", markup=False)
        await self.screen.mount(banner, before=0)
