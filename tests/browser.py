"""A small headless-Chromium driver for tests, speaking the Chrome DevTools Protocol (CDP).

One browser process per `Browser`; every `open()` gets a fresh tab, attached over the browser's
own websocket with flattened sessions, so a single connection carries everything. The domains
are enabled *before* navigating, so nothing the page does while loading is missed.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import websocket  # the websocket-client package

LOAD_TIMEOUT = 30.0    # seconds for a page to fire its load event
START_TIMEOUT = 20.0   # seconds for chromium to print its DevTools URL
SETTLE = 0.3           # seconds to keep listening after load: late errors, post-load requests
LOCAL_SCHEMES = {"file", "data", "about"}

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
]


def chromium_path() -> str | None:
    """The chromium executable on PATH, or None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


@dataclass
class PageLoad:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: Path | None = None

    @property
    def external_requests(self) -> list[str]:
        return [url for url in self.requests if urlsplit(url).scheme not in LOCAL_SCHEMES]


class Browser:
    def __init__(self, executable: str = "/usr/bin/chromium", width: int = 1280, height: int = 900):
        self.executable = executable
        self.width = width
        self.height = height
        self._proc: subprocess.Popen | None = None
        self._profile: str | None = None
        self._ws: websocket.WebSocket | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._devtools_url: str | None = None
        self._devtools_seen = threading.Event()
        self._next_id = 0
        self._responses: dict[int, dict] = {}
        self._events: list[dict] = []
        self._target: str | None = None
        self._session: str | None = None

    # -- process lifetime ------------------------------------------------------------------

    def __enter__(self) -> Browser:
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def _start(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="flagsweep-chromium-")
        argv = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}", "about:blank"]
        # A new session makes chromium's whole process tree one group we can kill at once.
        # Crash reports would otherwise land in ~/.config/chromium: keep them in the profile.
        env = {**os.environ, "XDG_CONFIG_HOME": self._profile, "XDG_CACHE_HOME": self._profile}
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, errors="replace",
                                      env=env, start_new_session=True)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self._devtools_seen.wait(START_TIMEOUT)
        if not self._devtools_url:
            raise BrowserError(f"chromium {self._why_no_url()}; last stderr lines:\n"
                               + "\n".join(self._stderr))
        # Chromium rejects websocket handshakes carrying an Origin it was not told to allow.
        self._ws = websocket.create_connection(self._devtools_url, suppress_origin=True,
                                               timeout=LOAD_TIMEOUT)

    def _why_no_url(self) -> str:
        try:
            return f"exited with code {self._proc.wait(1)} before printing its DevTools URL"
        except subprocess.TimeoutExpired:
            return f"printed no DevTools URL within {START_TIMEOUT:.0f} s"

    def _drain_stderr(self) -> None:
        """Keep reading so the pipe never fills and blocks chromium; remember only the tail."""
        for line in self._proc.stderr:
            line = line.rstrip("\n")
            self._stderr.append(line)
            if line.startswith("DevTools listening on ws://"):
                self._devtools_url = line.split(" on ", 1)[1].strip()
                self._devtools_seen.set()
        self._devtools_seen.set()  # EOF: chromium died; stop _start waiting for nothing

    def _stop(self) -> None:
        if self._ws is not None:
            self._close_browser()
            self._ws.close()
            self._ws = None
        if self._proc is not None:
            _kill_group(self._proc)
            self._proc = None
        if self._profile is not None:
            _kill_mentioning(self._profile)
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def _close_browser(self) -> None:
        """Ask chromium to quit so it shuts its children down and reaps them itself; signalling
        the whole group at once orphans more of them (zombies until init reaps them)."""
        try:
            self._send("Browser.close", session=False, timeout=5)
        except (BrowserError, websocket.WebSocketException, OSError):
            pass  # it may close the socket before replying; _kill_group is the fallback
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    # -- pages -----------------------------------------------------------------------------

    def open(self, path: Path, screenshot: Path | None = None, width: int | None = None,
             height: int | None = None, full_page: bool = True) -> PageLoad:
        self._close_tab()
        self._new_tab(width or self.width, height or self.height)
        url = Path(path).resolve().as_uri()
        self._events = []  # cleared before navigating: the load's events can beat the reply
        result = self._send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"navigating to {url} failed: {result['errorText']}")
        self._wait_for_event("Page.loadEventFired", LOAD_TIMEOUT,
                             f"{url} did not fire its load event within {LOAD_TIMEOUT:.0f} s")
        self._listen(SETTLE)
        if screenshot is not None:
            self._screenshot(Path(screenshot), full_page)
        return PageLoad(console_errors=_console_errors(self._events),
                        requests=[e["params"]["request"]["url"] for e in self._events
                                  if e["method"] == "Network.requestWillBeSent"],
                        screenshot=screenshot)

    def evaluate(self, expression: str):
        if self._session is None:
            raise BrowserError("evaluate() needs a page: call open() first")
        result = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"JS threw evaluating {expression!r}: "
                               f"{_exception_text(result['exceptionDetails'])}")
        return result["result"].get("value")  # absent for undefined

    def _new_tab(self, width: int, height: int) -> None:
        self._target = self._send("Target.createTarget", {"url": "about:blank"},
                                  session=False)["targetId"]
        self._session = self._send("Target.attachToTarget",
                                   {"targetId": self._target, "flatten": True},
                                   session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self._send(f"{domain}.enable")
        # Set before navigating so the page lays out at this size from the start.
        self._send("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})

    def _close_tab(self) -> None:
        if self._target is not None:
            self._send("Target.closeTarget", {"targetId": self._target}, session=False)
        self._target = self._session = None

    def _screenshot(self, dest: Path, full_page: bool) -> None:
        params: dict = {"format": "png"}
        if full_page:
            size = self._send("Page.getLayoutMetrics")["cssContentSize"]
            # captureBeyondViewport renders what lies outside the emulated viewport too;
            # without it the clip beyond the viewport comes back blank.
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                              "scale": 1}
        data = self._send("Page.captureScreenshot", params)["data"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(base64.b64decode(data))

    # -- the CDP connection ----------------------------------------------------------------

    def _send(self, method: str, params: dict | None = None, session: bool = True,
              timeout: float = LOAD_TIMEOUT) -> dict:
        """Send a command (to the current tab unless session=False) and wait for its reply."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while self._next_id not in self._responses:
            if not self._receive(deadline):
                raise BrowserError(f"no reply to {method} within {timeout:.0f} s")
        reply = self._responses.pop(self._next_id)
        if "error" in reply:
            raise BrowserError(f"{method} failed: {reply['error'].get('message')}")
        return reply.get("result", {})

    def _wait_for_event(self, method: str, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self._events):
            if not self._receive(deadline):
                raise BrowserError(message)

    def _listen(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self._receive(deadline):
            pass

    def _receive(self, deadline: float) -> bool:
        """Read one message, filing it as a reply or a current-tab event; False on timeout."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self._ws.settimeout(remaining)
        try:
            message = json.loads(self._ws.recv())
        except websocket.WebSocketTimeoutException:
            return False
        if "id" in message:
            self._responses[message["id"]] = message
        elif message.get("sessionId") == self._session and self._session is not None:
            self._events.append(message)  # events from already-closed tabs are dropped
        return True


def _kill_group(proc: subprocess.Popen) -> None:
    """Chromium forks zygotes, renderers and utility processes: end the whole group.

    SIGTERM first so chromium can exit cleanly; then SIGKILL the group regardless, since
    children can outlive the leader and would otherwise be left behind."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait(5)


def _kill_mentioning(profile: str) -> None:
    """chrome_crashpad_handler calls setsid(), escaping the group; it names its database,
    which lives in our unique profile dir, on its command line, so find it by that."""
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            if profile in (proc_dir / "cmdline").read_bytes().decode(errors="replace"):
                os.kill(int(proc_dir.name), signal.SIGKILL)
        except (OSError, ValueError):
            pass  # exited meanwhile, or not ours to read


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the group is already empty


def _console_errors(events: list[dict]) -> list[str]:
    errors = []
    for event in events:
        method, params = event["method"], event["params"]
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(_remote_object_text(arg) for arg in params.get("args", []))
            errors.append(f"Assertion failed: {text}" if params["type"] == "assert" else text)
        elif method == "Runtime.exceptionThrown":
            errors.append(_exception_text(params["exceptionDetails"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            errors.append(f"{entry['text']} ({entry['url']})" if entry.get("url") else entry["text"])
    return errors


def _remote_object_text(obj: dict) -> str:
    if "value" in obj:
        return str(obj["value"])
    return obj.get("description") or obj.get("unserializableValue") or obj["type"]


def _exception_text(details: dict) -> str:
    """The thrown value's description (message plus stack) beats the generic 'Uncaught'."""
    return details.get("exception", {}).get("description") or details.get("text", "exception")
