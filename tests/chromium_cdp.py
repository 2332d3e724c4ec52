"""Headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
JSON messages ending in NUL on file descriptors 3 and 4), with the standard library only.

Used by ``tests/evaluation/report/test_html_browser.py`` and ``benchmarks/report_html_scale.py``.
The browser runs with the network off (``--proxy-server=127.0.0.1:9``, nothing listens there)
and records every request the page makes (``Network.requestWillBeSent``), so a caller can check
that none left the page. Never downloads a browser: ``executable`` is Debian's ``chromium``.
"""
from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")
"""URLs that do not leave the machine."""


class Chromium:
    """One headless browser with one page (``open``), torn down by ``close`` (or ``with``)."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        cmd_read, self._cmd_write = os.pipe()
        self._out_read, out_write = os.pipe()

        def child_fds() -> None:  # fds 3 and 4 in the browser, whatever numbers the pipes got here
            a, b = os.dup(cmd_read), os.dup(out_write)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--mute-audio", f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9",
             f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, close_fds=False)
        os.close(cmd_read)
        os.close(out_write)
        self._next = 0
        self._replies: dict[int, Any] = {}
        self._inbox: queue.Queue[dict] = queue.Queue()
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session: str | None = None
        self.width, self.height = width, height

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._out_read, 1 << 16)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self._inbox.put(json.loads(msg))

    def send(self, method: str, params: dict | None = None, *, session: bool = True, timeout: float = 60) -> dict:
        """Send one command and wait for its reply; a protocol error raises RuntimeError."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_write, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self._inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{method}: no reply in {timeout} s") from None
            if "id" not in got:
                self.events.append(got)
                continue
            if got["id"] == msg["id"]:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})

    def open(self, url: str) -> None:
        """A new page at ``url``, with the network, page and runtime domains on."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Network", "Page", "Runtime"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str, timeout: float = 60) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); an exception
        in the page raises RuntimeError."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                        timeout=timeout)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:60]}: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"{expression!r} stayed false for {timeout} s")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def requests(self) -> list[str]:
        """Every URL the page requested so far (replies already read)."""
        self.drain()
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def failed(self) -> list[dict]:
        self.drain()
        return [e["params"] for e in self.events if e.get("method") == "Network.loadingFailed"]

    def drain(self) -> None:
        while True:
            try:
                got = self._inbox.get_nowait()
            except queue.Empty:
                return
            if "id" not in got:
                self.events.append(got)

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False, timeout=10)
        except (TimeoutError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_write)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def outside(urls: list[str]) -> list[str]:
    """The URLs that would leave the machine."""
    return [u for u in urls if not u.startswith(LOCAL_SCHEMES)]
