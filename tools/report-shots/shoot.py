#!/usr/bin/env python3
"""Screenshots of dlm-bench reports for docs/: the top screen and the full page, 1,400 px wide.

    python3 tools/report-shots/shoot.py [--open] OUT_DIR NAME=path/to/report.html [NAME=...]

writes OUT_DIR/NAME-top.png (1400×900) and OUT_DIR/NAME-full.png (the whole page as a reader
first sees it; with --open, every outer <details> block unfolded — the cells tables and the
sample lists, not the prompts inside them). Drives headless Chromium (/usr/bin/chromium, or $CHROMIUM) over the DevTools
protocol on a pipe (--remote-debugging-pipe: NUL-separated JSON on file descriptors 3 and 4),
so it needs only the Python standard library.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, TOP_HEIGHT = 1400, 900


class Chromium:
    def __init__(self):
        binary = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        os.set_inheritable(to_child_r, True)
        os.set_inheritable(from_child_w, True)
        profile = tempfile.mkdtemp(prefix="shoot-")

        def fds():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "--hide-scrollbars", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def page(self, method, params=None):
        return self.call(method, params, self.session)

    def close(self):
        self.proc.kill()


def shoot(browser, page, out_top, out_full, unfold):
    browser.page("Emulation.setDeviceMetricsOverride",
                 {"width": WIDTH, "height": TOP_HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    browser.page("Page.enable")
    browser.page("Page.navigate", {"url": page.resolve().as_uri()})
    browser.page("Runtime.evaluate", {"expression": "new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', r))", "awaitPromise": True})
    top = browser.page("Page.captureScreenshot", {"format": "png"})
    out_top.write_bytes(base64.b64decode(top["data"]))
    height = browser.page("Runtime.evaluate", {
        "expression": ("document.querySelectorAll('details').forEach(d => {"
                        " if (!d.parentElement.closest('details')) d.open = true; }); "
                       if unfold else "") + "document.documentElement.scrollHeight",
        "returnByValue": True})["result"]["value"]
    full = browser.page("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}})
    out_full.write_bytes(base64.b64decode(full["data"]))
    return height


def main():
    args = sys.argv[1:]
    unfold = "--open" in args
    args = [a for a in args if a != "--open"]
    if len(args) < 2:
        sys.exit(__doc__)
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    browser = Chromium()
    try:
        for arg in args[1:]:
            name, _, path = arg.partition("=")
            height = shoot(browser, Path(path), out / f"{name}-top.png", out / f"{name}-full.png",
                           unfold)
            print(f"{name}: top {WIDTH}x{TOP_HEIGHT}, full {WIDTH}x{height}")
    finally:
        browser.close()


if __name__ == "__main__":
    main()
