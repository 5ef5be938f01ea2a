"""`drifttui serve`'s web server: textual-serve, closed to other web pages.

textual-serve hands a full TUI session (a process running drifttui) to any websocket. A page on
another site the user visits can open one (browsers send the page's ``Origin`` and let it
through), and so can a page whose DNS name is rebound to 127.0.0.1 (the browser then sends
the attacker's name as ``Host``). :class:`GuardedServer` therefore

- refuses a request whose ``Host`` is not the served host:port or a localhost name (403);
  with ``--host 0.0.0.0`` (every interface) any Host is served, the token still applies;
- refuses a request whose ``Origin`` is not this server's own (403);
- requires the per-run secret printed in the URL (``/?token=...``, as Jupyter does): the page
  puts it in the websocket path, and a cookie (``SameSite=Strict``) carries it to downloads;
- serves its own copy of textual-serve's page with the bundled font and a Content-Security-Policy
  that loads nothing from another host.
"""
from __future__ import annotations

import hmac
import ipaddress
import secrets
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from textual_serve.server import Server

COOKIE = "drifttui_token"
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")
TEMPLATES = Path(__file__).resolve().parent


def is_loopback(host: str) -> bool:
    if host in ("localhost", "::1", "[::1]"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_all_interfaces(host: str) -> bool:
    return host in ("0.0.0.0", "::", "[::]", "")


class GuardedServer(Server):
    def __init__(self, command: str, host: str, port: int, title: str = "drifttui") -> None:
        super().__init__(command, host=host, port=port, title=title, templates_path=str(TEMPLATES))
        self.token = secrets.token_urlsafe(24)

    # -- what is allowed ------------------------------------------------------------------------
    def allowed_hosts(self) -> set[str]:
        names = {self.host, *LOCAL_NAMES}
        hosts = {f"{n}:{self.port}" for n in names}
        if self.port == 80:
            hosts |= names
        return hosts

    def host_ok(self, host: str) -> bool:
        return is_all_interfaces(self.host) or host.lower() in self.allowed_hosts()

    def origin_ok(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        return origin is None or origin.lower() == f"http://{request.host}".lower()

    def token_ok(self, request: web.Request) -> bool:
        given = (request.match_info.get("token") or request.query.get("token")
                 or request.cookies.get(COOKIE) or "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self.host_ok(request.host):
            return web.Response(status=403, text=f"drifttui serve: refused Host {request.host!r}\n")
        if not self.origin_ok(request):
            return web.Response(status=403, text="drifttui serve: refused a request from another web page\n")
        if not request.path.startswith("/static/") and not self.token_ok(request):
            return web.Response(status=403, text="drifttui serve: open the URL printed at start (with its token)\n")
        response = await handler(request)
        response.headers["Content-Security-Policy"] = (
            f"default-src 'self'; connect-src 'self' ws://{request.host}; img-src 'self' data:; "
            "font-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
        response.headers["Referrer-Policy"] = "no-referrer"      # the token never leaves in a Referer
        if request.path == "/":
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    # -- textual-serve's app, routes and page, with the guard -----------------------------------------
    async def _make_app(self) -> web.Application:
        import aiohttp_jinja2
        import jinja2

        app = web.Application(middlewares=[self.guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{token}", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:   # type: ignore[override]
        import aiohttp_jinja2

        base = f"http://{request.host}"      # the Host the guard let through, not 0.0.0.0
        static = base + str(request.app.router["static"].url_for(filename="/")).rstrip("/") + "/"
        ws = "ws://" + request.host + str(request.app.router["websocket"].url_for(token=self.token))
        try:
            font_size = int(request.query.get("fontsize", "16"))
        except ValueError:
            font_size = 16
        context = {"font_size": font_size, "app_websocket_url": ws, "config": {"static": {"url": static}},
                   "application": {"name": self.title}}
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if is_all_interfaces(self.host) else self.host
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return f"http://{host}:{self.port}/?token={self.token}"

    async def on_startup(self, app: web.Application) -> None:
        return None         # textual-serve prints its URL here, before the socket listens

    def _listening(self, *_: Any) -> None:
        sys.stderr.write(f"drifttui: serving at {self.url} (ctrl+c stops)\n")
        sys.stderr.flush()

    def serve(self, debug: bool = False) -> None:
        """textual-serve's serve(), but the URL is printed once the socket listens."""
        import asyncio
        import signal

        from aiohttp.web_runner import GracefulExit  # noqa: F401  (raised by request_exit)

        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.request_exit)
            except NotImplementedError:
                pass
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=self._listening)
