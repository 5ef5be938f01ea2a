"""`drifttui serve`: the terminal debugger in a web browser, through textual-serve, closed to
other web pages (drifttui/web/server.py: Host and Origin checked, a per-run token in the URL)."""
from __future__ import annotations

import argparse
import sys

from drifttui.errors import EXIT_OK

SERVE_EPILOG = """examples:
  drifttui serve                         # the demo at http://127.0.0.1:8000
  drifttui serve --port 9000 -- tui model.py:build --onnx model.onnx
  drifttui serve --host 0.0.0.0 -- tui --report r.json   # reachable from other machines (warns)

Open the URL it prints: it carries a secret token made for this run. Requests from other web
pages (a foreign Origin) or another host name (DNS rebinding) are refused."""


def _add_serve_parser(sub) -> None:
    serve = sub.add_parser("serve", help="serve the terminal debugger in a web browser (textual-serve)",
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SERVE_EPILOG)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("app_args", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                       help="the drifttui command each browser session runs (default: demo)")
    serve.add_argument("--debug", action="store_true", help="show tracebacks")


def serve_command(app_args: list[str]) -> str:
    """The shell command textual-serve runs per session: this Python, ``-m drifttui ...``."""
    import shlex

    from drifttui.errors import InputError

    args = [a for a in app_args if a != "--"] if app_args and app_args[0] == "--" else list(app_args)
    args = args or ["demo"]
    if args[0] == "serve":
        raise InputError("drifttui serve cannot serve itself", "give a command such as `-- tui MODEL` or `-- demo`")
    return shlex.join([sys.executable, "-m", "drifttui", *args])


def cmd_serve(args: argparse.Namespace) -> int:
    from drifttui.errors import InputError

    if not 0 < args.port < 65536:
        raise InputError(f"--port {args.port} is not a port number", "give a port between 1 and 65535")
    try:
        from drifttui.web.server import GuardedServer, is_loopback
    except ImportError as exc:
        raise InputError("drifttui serve needs textual-serve", 'install it: pip install "drifttui[serve]"') from exc
    command = serve_command(args.app_args)
    _resolve(args.host)
    if not is_loopback(args.host):
        sys.stderr.write(f"drifttui: warning: --host {args.host} can be reached from other machines: anyone who "
                         "has the URL below (with its token) runs this command on this machine; serve on "
                         "127.0.0.1 and use an SSH tunnel instead when you can\n")
    sys.stderr.write(f"drifttui: each browser session runs `{command}`\n")
    try:
        GuardedServer(command, host=args.host, port=args.port).serve()
    except OSError as exc:      # a busy port, an address not of this machine
        from drifttui.errors import environment_failure

        refused = environment_failure(exc)
        if refused is None:
            raise
        raise InputError(f"cannot serve on {args.host}:{args.port}: {refused.problem}", refused.fix) from exc
    return EXIT_OK


def _resolve(host: str) -> None:
    """Before anything is said or bound: ``--host`` must name an address (InputError when it does not)."""
    import socket

    from drifttui.errors import InputError

    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as exc:
        raise InputError(f"--host {host!r} does not resolve ({getattr(exc, 'strerror', None) or exc})",
                         "give an address or a host name of this machine, e.g. 127.0.0.1") from exc
