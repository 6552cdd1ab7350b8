"""``kernelscope serve``: the explorer in a browser (textual-serve), for a projector or a laptop.

Binds to loopback only: each browser tab runs ``kernelscope [WHAT]`` as this user (and the editor
runs Python), so the port must not be reachable from other machines (reach it over ``ssh -L``
instead), nor drivable by any web page the user happens to visit. Like Jupyter, each start makes a
random token, printed in the URL to open; the page and the WebSocket both require it (the page
sets it as an HttpOnly, SameSite=Strict cookie the WebSocket upgrade carries), and a request from
a foreign Origin or for a foreign Host (DNS rebinding) is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import secrets
import shlex
import socket
import sys
from typing import Any

LOOPBACK = ("127.0.0.1", "localhost", "::1")
FONT = 16  # the page's font size in px (``?fontsize=`` overrides it)
BIG_FONT = 20  # with --big: readable from the back of a room
# The page's background under the grid, per theme (the grid seldom fills the window exactly).
PAGE_BACKGROUND = {"textual-dark": "#121212", "textual-light": "#E0E0E0"}
PAGE_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve_page")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", help="a bundle folder or a target to open (default: the gallery)")
    p.add_argument("--port", type=int, default=8000, help="local port (default: 8000)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1, localhost or ::1)")
    p.add_argument("--big", action="store_true", help="presentation mode for a talk: your source, the fused kernel "
                                                      f"and the counts, at a larger font (?fontsize={BIG_FONT})")
    p.add_argument("--light", action="store_true", help="light theme (projectors often read better)")
    p.add_argument("--talk", nargs="?", const="", default=None, metavar="SCRIPT",
                   help="run a talk script (default: the seed story shipped with kernelscope); space or → steps")
    p.add_argument("--log", metavar="FILE", help="write a debug log of requests to FILE (mode 0600, the token "
                                                 "redacted); by default nothing is logged per request")


def serve_command(args: argparse.Namespace) -> str:
    """The shell command each browser session runs."""
    env = ["KERNELSCOPE_SERVE=1"]  # quitting asks first; screenshots go to the browser
    if args.big:
        env.append("KERNELSCOPE_BIG=1")
    if args.light:
        env.append("KERNELSCOPE_THEME=textual-light")
    talk = getattr(args, "talk", None)
    if talk is not None:
        cmd = [sys.executable, "-m", "kernelscope", "talk"] + ([os.path.abspath(talk)] if talk else [])
        if args.light:
            cmd.append("--light")
        return " ".join(env + [shlex.quote(c) for c in cmd])
    cmd = [sys.executable, "-m", "kernelscope"] + ([os.path.abspath(args.what) if os.path.exists(args.what)
                                                   else args.what] if args.what else [])
    return " ".join(env + [shlex.quote(c) for c in cmd])


def what_problem(what: str | None) -> str | None:
    """Why ``kernelscope WHAT`` would not open (a damaged or missing bundle, a bad target), else None."""
    if not what:
        return None
    from pathlib import Path

    from kernelscope.bundle.io import BundleError, read_bundle
    from kernelscope.target import TargetError, resolve_target

    path = Path(what).expanduser()
    try:
        if path.is_dir() or path.name == "bundle.json":
            read_bundle(path)
        else:
            resolve_target(what)
    except (BundleError, TargetError) as exc:
        return str(exc)
    return None


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def allowed_hosts(port: int) -> set[str]:
    """The Host headers (and, with http://, the Origins) of a page this server served itself."""
    return {f"{url_host(h)}:{port}" for h in LOOPBACK}


def port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on HOST:PORT (None when it can), checked by binding first."""
    if not 1 <= port <= 65535:
        return f"--port {port} is out of range; pick a port from 1 to 65535"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"cannot resolve {host} ({exc})"
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does
            try:
                s.bind(addr)
            except OSError as exc:
                return (f"port {port} on {host} is not free ({exc.strerror or exc}); "
                        f"pick another with --port")
    return None


def redact(text: str, token: str) -> str:
    """``text`` without the token: the token itself and any ``token=`` value."""
    import re

    return re.sub(r"(token=)[^&\s\"']+", r"\1<token>", text.replace(token, "<token>"))


class RedactToken:
    """A logging filter that replaces the server's token (and any ``token=`` value) in a record's text."""

    def __init__(self, token: str) -> None:
        self.token = token

    def filter(self, record) -> bool:
        record.msg, record.args = redact(record.getMessage(), self.token), ()
        return True


def _log_handler(fd: int, token: str):
    """The --log handler: every record's whole text redacted as it is written (the message, and the
    traceback and stack an HTTP library's error report carries: a bad request line quotes the token), and a
    write that fails (a full disk) said once in one line, then the log given up, never a traceback a request."""
    import logging

    class RedactingFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return redact(super().format(record), token)

    class LogHandler(logging.StreamHandler):
        failed = False

        def emit(self, record: logging.LogRecord) -> None:
            if not self.failed:
                super().emit(record)

        def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802  (logging's name)
            if self.failed:
                return
            self.failed = True
            exc = sys.exc_info()[1]
            from kernelscope.safefile import why

            print(f"kernelscope: cannot write the --log file ({why(exc) if isinstance(exc, OSError) else exc}); "
                  "serving on without it", file=sys.stderr, flush=True)

    handler = LogHandler(os.fdopen(fd, "a", encoding="utf-8", errors="replace"))
    handler.addFilter(RedactToken(token))
    handler.setFormatter(RedactingFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    return handler


def quiet_logging(token: str, log_file: str | None) -> None:
    """No request is logged by default: aiohttp's access log holds ``GET /?token=...`` and the Referer,
    and a terminal redirected to a file (or scrolled away from the URL) must not keep them. With
    ``--log FILE`` a debug log goes to FILE, created 0600, with the token redacted."""
    import logging

    for name in ("aiohttp.access", "aiohttp.server", "aiohttp.web", "textual-serve"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = False
        lg.setLevel(logging.CRITICAL + 1)
    if not log_file:
        return
    from kernelscope.safefile import FileProblem, open_private_log

    try:
        fd = open_private_log(log_file)
    except FileProblem as exc:  # changed since run() checked it: said, and served without
        print(f"kernelscope: {exc}; serving without --log", file=sys.stderr, flush=True)
        return
    handler = _log_handler(fd, token)
    for name in ("aiohttp.access", "aiohttp.server", "aiohttp.web", "textual-serve"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)


def make_server(command: str, host: str, port: int, token: str, *, font_size: int = FONT,
                theme: str = "textual-dark", log_file: str | None = None) -> Any:
    """A textual-serve Server that requires TOKEN and a loopback Host/Origin on every request but
    its static files. Checked against textual-serve 1.1.3: its ``_make_app()`` builds the aiohttp
    app (routes "/", "/ws", "/download/{key}", "/static"), and ``handle_index`` builds the page's
    URLs from ``self.public_url``. The page is our copy of its template (serve_page/app_index.html):
    its font comes from textual-serve's static folder, not from a CDN, the terminal takes the keys
    on load, and the page's background is the theme's."""
    import aiohttp_jinja2
    import textual_serve
    from aiohttp import web
    from textual_serve.server import Server, to_int

    statics = os.path.join(os.path.dirname(os.path.abspath(textual_serve.__file__)), "static")

    hosts = allowed_hosts(port)
    origins = {f"http://{h}" for h in hosts}
    cookie = f"kernelscope-token-{port}"  # cookies ignore ports: one name per server

    def token_ok(request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(cookie) or ""
        return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8"))

    @web.middleware
    async def guard(request: web.Request, handler):
        if request.path.startswith("/static/"):  # textual-serve's own JS, CSS and fonts: nothing secret
            return await handler(request)
        if request.headers.get("Host", "") not in hosts:
            raise web.HTTPForbidden(text="kernelscope serve: unknown Host; open the URL printed in the terminal\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in origins:
            raise web.HTTPForbidden(text=f"kernelscope serve: requests from {origin} are refused\n")
        if not token_ok(request):
            raise web.HTTPForbidden(text="kernelscope serve: missing or wrong token; open the URL with "
                                         "?token=... printed in the terminal\n")
        response = await handler(request)
        if request.path == "/" and isinstance(response, web.Response):
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        return response

    class GuardedServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(guard)
            return app

        @aiohttp_jinja2.template("app_index.html")
        async def handle_index(self, request: web.Request):
            # The page's WebSocket and static URLs on the host the browser used (checked by guard),
            # so its cookie goes with the upgrade; no await before the base reads it.
            self.public_url = f"http://{request.headers['Host']}"
            context = await Server.handle_index.__wrapped__(self, request)
            context["font_size"] = max(6, min(64, to_int(request.query.get("fontsize", ""), font_size)))
            context["page_background"] = PAGE_BACKGROUND.get(theme, PAGE_BACKGROUND["textual-dark"])
            return context

        def initialize_logging(self) -> None:  # textual-serve's logs every request (URL, token) at INFO
            quiet_logging(token, log_file)

        async def on_startup(self, app: web.Application) -> None:
            # aiohttp runs this before its socket listens: the URL is printed once a connection to it
            # succeeds, so whoever reads it (a user, a script) can open it at once.
            app["kernelscope_url_task"] = asyncio.ensure_future(self._print_url_when_listening())

        async def _print_url_when_listening(self) -> None:
            deadline = asyncio.get_running_loop().time() + 10
            while asyncio.get_running_loop().time() < deadline:
                try:
                    _, writer = await asyncio.open_connection(host, port)
                except OSError:
                    await asyncio.sleep(0.02)
                    continue
                writer.close()
                break
            # The one line the user must copy, printed last (nothing per request scrolls it away).
            print(f"kernelscope: serving on http://{url_host(host)}:{port}/?token={token}  (ctrl+c to stop)",
                  file=sys.stderr, flush=True)

    return GuardedServer(command, host=host, port=port, title="kernelscope",
                         public_url=f"http://{url_host(host)}:{port}", statics_path=statics,
                         templates_path=PAGE_TEMPLATES)


def run(args: argparse.Namespace) -> int:
    if args.host not in LOOPBACK:
        print(f"kernelscope: refusing to serve on {args.host}: only loopback addresses "
              f"({', '.join(LOOPBACK)}); use `ssh -L {args.port}:localhost:{args.port}` to reach it", file=sys.stderr)
        return 2
    problem = port_problem(args.host, args.port)
    if problem:
        print(f"kernelscope: {problem}", file=sys.stderr)
        return 2
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        print("kernelscope: `serve` needs textual-serve; install it with `pip install 'kernelscope[serve]'`",
              file=sys.stderr)
        return 2
    if getattr(args, "talk", None):
        from kernelscope.ui.talk import TalkError, load_talk

        try:
            load_talk(args.talk)  # a bad script is one line here, not a broken page
        except TalkError as exc:
            print(f"kernelscope: {exc}", file=sys.stderr)
            return 2
    problem = what_problem(getattr(args, "what", None))
    if problem:  # said here, once, not in every browser tab that opens the page
        print(f"kernelscope: {problem}", file=sys.stderr)
        return 2
    if getattr(args, "log", None):
        from kernelscope.safefile import FileProblem, open_private_log

        try:  # said now, in one line, not as a failure to serve
            os.close(open_private_log(args.log))
        except FileProblem as exc:
            print(f"kernelscope: {exc}; give --log another file", file=sys.stderr)
            return 2
    server = make_server(serve_command(args), args.host, args.port, secrets.token_urlsafe(24),
                         font_size=BIG_FONT if args.big else FONT,
                         theme="textual-light" if args.light else "textual-dark",
                         log_file=getattr(args, "log", None))
    try:
        server.serve()
    except OSError as exc:  # the port was taken between the check and the bind
        print(f"kernelscope: cannot serve on {args.host}:{args.port} ({exc.strerror or exc}); "
              "pick another with --port", file=sys.stderr)
        return 2
    return 0
