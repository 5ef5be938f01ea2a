"""A live Triton server through tritonclient (HTTP or gRPC), a timeout on every request.

``http://host:port`` / ``https://`` use tritonclient.http, ``grpc://host:port`` / ``grpcs://``
tritonclient.grpc.  Every failure is one line: an unreachable server or a TLS / HTTP error, an
unknown model or version (InputError, exit 2); a server that answers with a missing output or the
wrong shape or dtype (ModelError, exit 3).  ``close`` closes the connections (a server's shutdown
waits for open ones).
"""
from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence
from urllib.parse import urlsplit

import numpy as np

from drifttui.core.runtime.triton.config import WIRE, from_json
from drifttui.errors import InputError, ModelError, first_line

TIMEOUT = 30.0          # seconds per request (connect, metadata, one inference)
SCHEMES = {"http": ("http", False), "https": ("http", True), "grpc": ("grpc", False), "grpcs": ("grpc", True)}


@dataclass(frozen=True)
class Endpoint:
    protocol: str     # "http" | "grpc"
    tls: bool
    host: str         # host:port, as tritonclient takes it
    url: str


def parse_url(url: str) -> Endpoint:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname or parts.path not in ("", "/"):
        raise InputError(f"--triton-url {url!r} is not http://HOST:PORT or grpc://HOST:PORT",
                         "write e.g. --triton-url http://127.0.0.1:8000 or grpc://127.0.0.1:8001")
    protocol, tls = SCHEMES[parts.scheme]
    try:
        port = parts.port or (8001 if protocol == "grpc" else 8000)
    except ValueError:
        raise InputError(f"--triton-url {url!r} has no valid port", "write HOST:PORT, e.g. 127.0.0.1:8000") from None
    return Endpoint(protocol, tls, f"{parts.hostname}:{port}", url)


def _needs_client(protocol: str) -> Any:
    try:
        if protocol == "grpc":
            import tritonclient.grpc as mod
        else:
            import tritonclient.http as mod
    except ImportError as exc:
        raise InputError(f"tritonclient's {protocol} client is not installed ({first_line(exc)})",
                         "pip install 'drifttui[triton]'") from exc
    return mod


class Session:
    """One connection to a server; ``infer`` / ``infer_many`` send samples, every call bounded in time."""

    def __init__(self, url: str, timeout: float = TIMEOUT, concurrency: int = 8) -> None:
        self.endpoint = parse_url(url)
        self.timeout = timeout
        self.mod = _needs_client(self.endpoint.protocol)
        self.concurrency = concurrency
        self.client = self._open(1)
        self.pool: Any = None       # HTTP: a second client with a connection pool, for infer_many

    def _open(self, concurrency: int) -> Any:
        kwargs: dict[str, Any] = {"url": self.endpoint.host, "ssl": self.endpoint.tls}
        if self.endpoint.protocol == "http":
            kwargs.update(connection_timeout=self.timeout, network_timeout=self.timeout, concurrency=concurrency)
        try:
            return self.mod.InferenceServerClient(**kwargs)
        except Exception as exc:
            raise InputError(f"cannot open a connection to {self.endpoint.url}: {first_line(exc)[:200]}",
                             "check --triton-url") from exc

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self.endpoint.protocol == "grpc":
            kwargs["client_timeout"] = self.timeout
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise self._error(what, exc) from exc

    def _error(self, what: str, exc: BaseException) -> Exception:
        text = first_line(exc)[:240]
        low = text.lower()
        url = self.endpoint.url
        if "unknown model" in low or "not found" in low or "unavailable model" in low or "is not ready" in low \
                or "request for unknown model" in low:
            return InputError(f"the server at {url} does not serve {what}: {text}",
                              "check --model and --version against the server's repository")
        if any(k in low for k in ("connect", "refused", "unavailable", "timed out", "timeout", "deadline",
                                  "ssl", "tls", "certificate", "reset", "broken pipe", "name or service")):
            return InputError(f"cannot reach the Triton server at {url} ({what}): {text}",
                              "start the server, or fix --triton-url (http://HOST:PORT or grpc://HOST:PORT)")
        return InputError(f"the Triton server at {url} refused {what}: {text}",
                          "check the model, version and inputs against the server's config")

    # -- the model's description ---------------------------------------------------------------
    def live(self) -> None:
        ok = self._call("a liveness check", self.client.is_server_live)
        if not ok:
            raise InputError(f"the Triton server at {self.endpoint.url} is not live", "wait for it to start")

    def config(self, model: str, version: Optional[int]) -> Any:
        """The effective config (after autocomplete) as a ModelConfig."""
        v = "" if version is None else str(version)
        what = f"model {model!r}" + (f" version {v}" if v else "")
        if self.endpoint.protocol == "grpc":
            data = self._call(what, self.client.get_model_config, model, v, as_json=True).get("config", {})
        else:
            data = self._call(what, self.client.get_model_config, model, v)
        return from_json(data, self.endpoint.url)

    def metadata(self, model: str, version: Optional[int]) -> dict:
        v = "" if version is None else str(version)
        kwargs = {"as_json": True} if self.endpoint.protocol == "grpc" else {}
        return self._call(f"model {model!r} metadata", self.client.get_model_metadata, model, v, **kwargs)

    # -- inference -------------------------------------------------------------------------------
    def _inputs(self, feeds: dict[str, np.ndarray]) -> list:
        out = []
        for name, arr in feeds.items():
            inp = self.mod.InferInput(name, list(arr.shape), WIRE.get(str(arr.dtype), "FP32"))
            if self.endpoint.protocol == "http":
                inp.set_data_from_numpy(arr, binary_data=True)
            else:
                inp.set_data_from_numpy(arr)
            out.append(inp)
        return out

    def _outputs(self, names: Sequence[str]) -> list:
        if self.endpoint.protocol == "http":
            return [self.mod.InferRequestedOutput(n, binary_data=True) for n in names]
        return [self.mod.InferRequestedOutput(n) for n in names]

    def infer(self, model: str, version: Optional[int], feeds: dict[str, np.ndarray],
              names: Sequence[str]) -> dict[str, np.ndarray]:
        v = "" if version is None else str(version)
        what = f"model {model!r}" + (f" version {v}" if v else "")
        result = self._call(what, self.client.infer, model, self._inputs(feeds),
                            model_version=v, outputs=self._outputs(names))
        return _answers(result, names)

    def infer_many(self, model: str, version: Optional[int], batches: list[dict[str, np.ndarray]],
                   names: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """Every request in flight at once (the dynamic batcher may join them); answers in order."""
        v = "" if version is None else str(version)
        deadline = time.monotonic() + self.timeout
        if self.endpoint.protocol == "http":
            self.pool = self.pool or self._open(self.concurrency)
            pending = [self._call(f"model {model!r}", self.pool.async_infer, model, self._inputs(f),
                                  model_version=v, outputs=self._outputs(names)) for f in batches]
            results = [self._call("an inference", p.get_result, block=True,
                                  timeout=max(0.1, deadline - time.monotonic())) for p in pending]
            return [_answers(r, names) for r in results]
        done: "queue.Queue[tuple[int, Any, Any]]" = queue.Queue()
        for i, f in enumerate(batches):
            self._call("an inference", self.client.async_infer, model, self._inputs(f),
                       callback=lambda result, error, i=i: done.put((i, result, error)), model_version=v,
                       outputs=self._outputs(names))
        got: dict[int, Any] = {}
        while len(got) < len(batches):
            try:
                i, res, err = done.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise InputError(f"the Triton server at {self.endpoint.url} did not answer "
                                 f"{len(batches) - len(got)} request(s) within {self.timeout:.0f} s",
                                 "check the server's load and logs") from None
            if err is not None:
                raise self._error("an inference", err)
            got[i] = res
        return [_answers(got[i], names) for i in range(len(batches))]

    def close(self) -> None:
        for client in (self.client, self.pool):
            try:
                if client is not None:
                    client.close()
            except Exception:    # closing a broken connection: nothing left to free
                pass


def _answers(result: Any, names: Sequence[str]) -> dict[str, np.ndarray]:
    out = {}
    for n in names:
        arr = result.as_numpy(n)
        if arr is None:
            raise ModelError(f"the Triton server's answer has no output {n!r}",
                             "check the config's output names against the file's")
        out[n] = arr
    return out
