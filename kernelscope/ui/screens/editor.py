"""EditorScreen: edit the function in a scratch copy of its file, recompile, see the kernels change.

The user's file is only written on ctrl+s, after a yes/no confirmation naming the file; a sample shipped
with kernelscope is never written: ctrl+s asks where to save the edits instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import TextArea

from kernelscope.ui.capture_request import CaptureRequest
from kernelscope.ui.messages import CaptureFinished, CaptureRequested
from kernelscope.ui.paths import new_scratch_dir
from kernelscope.ui.widgets.fitted_line import FittedLine
from kernelscope.ui.widgets.key_footer import KeyFooter


class EditorScreen(Screen):
    BINDINGS = [
        Binding("ctrl+r", "recompile", "Recompile", priority=True),
        Binding("ctrl+s", "save", "Save to your file…", priority=True),
        Binding("ctrl+s", "save_as", "Save as…", priority=True),  # a shipped sample (check_action picks one)
        # priority: the TextArea would take escape (it moves focus out of a code editor)
        Binding("escape", "back", "Back", priority=True),
    ]

    def __init__(self, request: CaptureRequest, *, origin_file: str, name: str, scratch: Path | None = None,
                 first_line: int | None = None, last_bundle=None) -> None:
        super().__init__()
        self.request = request
        self.last_bundle = last_bundle  # the latest capture of this function: what the next one is compared with
        self.origin_file = Path(origin_file)
        self.function = name
        self.first_line = first_line
        if scratch is None:
            scratch = new_scratch_dir(name) / self.origin_file.name
            shutil.copyfile(self.origin_file, scratch)
        self.scratch = scratch

    def compose(self) -> ComposeResult:
        # What is edited first, the full path last: at 80 columns the end of the line is cut.
        copy = f"Editing {self.function} · a scratch copy of {Path(self.origin_file).name}"
        yield FittedLine(f"{copy}  ({self.origin_file})", copy, id="summary")
        area = TextArea.code_editor(self.scratch.read_text(encoding="utf-8"), id="editor")
        try:
            area.language = "python"
        except Exception:  # no tree-sitter grammar: plain text editing still works
            pass
        yield area
        # What keeps the user's file safe first: at 80 columns the scratch path alone filled the line.
        yield FittedLine(*self._status_wordings(), id="editor-status")
        yield KeyFooter()

    @property
    def is_shipped_sample(self) -> bool:
        from kernelscope.target import samples_dir

        try:
            return self.origin_file.resolve().is_relative_to(samples_dir().resolve())
        except OSError:
            return False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("save", "save_as"):
            return (action == "save_as") == self.is_shipped_sample
        return True

    def _status_wordings(self) -> tuple[str, ...]:
        """Longest first: what keeps the user's file safe, then where the scratch copy is (its name at
        the least, never a path cut inside a folder's name)."""
        safe = ("the sample is never written: ctrl+s saves your edits as a file of yours"
                if self.is_shipped_sample else "your file is untouched until ctrl+s")
        short = "ctrl+s: save as…" if self.is_shipped_sample else "untouched until ctrl+s"
        return (f"{safe}  ·  scratch: {self.scratch}", f"{safe}  ·  scratch: …/{self.scratch.parent.name}/"
                f"{self.scratch.name}", safe, f"{short}  ·  scratch: …/{self.scratch.name}", short)

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        if self.first_line:
            area.move_cursor((self.first_line - 1, 0), center=True)
        area.focus()

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    def unsaved(self) -> bool:
        """Edits that leaving would lose: in neither the scratch copy (ctrl+r) nor your file (ctrl+s)."""
        text = self.text
        for path in (self.scratch, self.origin_file):
            try:
                if path.read_text(encoding="utf-8") == text:
                    return False
            except OSError:
                continue
        return True

    def action_back(self) -> None:
        if self.app.screen is not self:
            return
        if not self.unsaved():
            self.app.pop_screen()
            return
        from kernelscope.ui.screens.dialogs import ConfirmScreen

        def answer(yes: bool | None) -> None:
            if yes:
                self.app.pop_screen()

        self.app.push_screen(ConfirmScreen("Leave the editor and lose your edits? They are neither recompiled "
                                           "(ctrl+r) nor saved to your file (ctrl+s)."), answer)

    def action_recompile(self) -> None:
        self.scratch.write_text(self.text, encoding="utf-8")
        req = self.request.with_options(target=f"{self.scratch}::{self.function}", out=None,
                                        origin_file=str(self.origin_file))
        self.post_message(CaptureRequested(req, previous=self.last_bundle, origin=self, over=True))

    @on(CaptureFinished)
    def _captured(self, event: CaptureFinished) -> None:
        self.last_bundle = event.bundle

    def action_save(self) -> None:
        from kernelscope.ui.screens.dialogs import ConfirmScreen

        def answer(yes: bool | None) -> None:
            if yes:
                try:
                    self.origin_file.write_text(self.text, encoding="utf-8")
                except OSError as exc:
                    self.notify(f"could not save {self.origin_file}: {exc.strerror or exc}", severity="error")
                    return
                self.notify(f"saved {self.origin_file}")

        self.app.push_screen(ConfirmScreen(f"Overwrite {self.origin_file} with your edits?"), answer)

    def action_save_as(self) -> None:
        """A shipped sample stays as shipped: the edits go to a file the user names (a new one, or one
        they confirm replacing), which ctrl+s saves to from then on."""
        from kernelscope.ui.screens.dialogs import ConfirmScreen, PromptScreen

        def write(path: Path) -> None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(self.text, encoding="utf-8")
            except OSError as exc:
                self.notify(f"could not save {path}: {exc.strerror or exc}", severity="error")
                return
            self.origin_file = path
            self.query_one("#editor-status", FittedLine).set_variants(*self._status_wordings())
            self.notify(f"saved {path} · capture it with kernelscope {path}::{self.function}")

        def named(value: str | None) -> None:
            if not value:
                return
            path = Path(value).expanduser().absolute()
            if path.is_dir():
                path = path / self.origin_file.name
            from kernelscope.target import samples_dir

            if path.resolve().is_relative_to(samples_dir().resolve()):
                self.notify(f"{path} is among kernelscope's samples: name a file of yours", severity="error")
            elif path.exists():
                self.app.push_screen(ConfirmScreen(f"Overwrite {path} with your edits?"),
                                     lambda yes: write(path) if yes else None)
            else:
                write(path)

        self.app.push_screen(PromptScreen(f"{self.origin_file.name} ships with kernelscope and stays as it is. "
                                          "Save your edits as:", value=str(Path.cwd() / self.origin_file.name)),
                             named)
