#!/usr/bin/env python3
"""Open an HTML page in headless Chromium (Debian's `chromium`) and say what it did.

Drives the browser over the DevTools protocol on a pipe (--remote-debugging-pipe:
commands on fd 3, replies on fd 4, each a JSON message ended by a NUL byte), so
nothing listens on a port. Prints one JSON object:

  load_ms          wall time from Page.navigate to the load event
  load_cpu_ms      CPU time every browser process spent meanwhile (the open
                   time on an idle core; the wall time grows with the host's load)
  nav_load_ms      the page's own navigation timing (loadEventEnd)
  requests         every URL the page asked for besides itself (must be [])
  console_errors   console errors/warnings, uncaught exceptions and log entries
                   (CSP violations arrive here) of level warning or error
  marker           window.__pwned (null unless a hostile script ran)
  ready            the page's script ran (data-report-ready="1")
  counts           {name: text} of every [data-count] element
  images, scripts  how many <img> and <script> elements the DOM holds
  text_has         {needle: bool} for each --expect-text, in the rendered text
  filtered         with --filter-category C: how many task rows stay visible
                   after choosing C in the page's category filter

Usage: report_browser.py PAGE.html [--screenshot PNG [--screenshot-scale F]] [--expect-text S]...
                         [--filter-category C] [--timeout S]
The browser runs as root here, so with --no-sandbox, and with a fresh
profile directory removed at the end.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, profile, log):
        cmd_r, self.cmd_w = os.pipe()
        self.rep_r, rep_w = os.pipe()

        def child_fds():
            # (subprocess closes every other descriptor after this runs)
            a, b = os.dup(cmd_r), os.dup(rep_w)  # out of the way of 3 and 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--remote-debugging-pipe", "--window-size=1200,1500", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=child_fds, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(rep_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no message from the browser in time")
            chunk = os.read(self.rep_r, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its pipe (exit %s)" % self.proc.poll())
            self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout):
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return self.events.pop()

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def tree_cpu_ms(root):
    """CPU time (user + system) of a process and all its descendants, and of
    the children it has reaped, in ms: what opening the page cost the browser,
    whatever else the machine is doing (the wall time is not that on a loaded host)."""
    parent, stat = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        stat[int(d)] = fields
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    ticks = 0
    for pid in tree:
        f = stat.get(pid)
        if f:  # utime, stime, cutime, cstime are fields 14-17 (after pid and comm: index 11-14)
            ticks += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    return ticks * 1000 // os.sysconf("SC_CLK_TCK")


def evaluate(b, session, expr):
    r = b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
    return r.get("result", {}).get("value")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--screenshot")
    ap.add_argument("--screenshot-scale", type=float, default=1.0, help="e.g. 0.5 for a smaller image")
    ap.add_argument("--expect-text", action="append", default=[])
    ap.add_argument("--filter-category")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    path, _, fragment = args.page.partition("#")
    url = "file://" + os.path.abspath(path) + ("#" + fragment if fragment else "")
    profile = tempfile.mkdtemp(prefix="lazyagent-chromium-")
    # Beside the profile, not through it: the profile is gone by the unlink.
    log_path = profile + ".log"
    try:
        return run_page(args, url, profile, log_path)
    finally:
        # Chromium's log is for a failure's message (Browser says where); it is
        # never left behind in /tmp, whatever ended the run.
        try:
            os.unlink(log_path)
        except OSError:
            pass


def run_page(args, url, profile, log_path):
    out = {}
    with open(log_path, "w") as log:
        b = Browser(profile, log)
        try:
            targets = b.call("Target.getTargets")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            session = b.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
            for domain in ("Network", "Runtime", "Log", "Page"):
                b.call(domain + ".enable", {}, session)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": 1200, "height": 1500, "deviceScaleFactor": 1, "mobile": False}, session)
            b.events.clear()
            cpu0 = tree_cpu_ms(b.proc.pid)
            t0 = time.monotonic()
            b.call("Page.navigate", {"url": url}, session)
            b.wait_event("Page.loadEventFired", args.timeout)
            out["load_ms"] = round((time.monotonic() - t0) * 1000)
            out["load_cpu_ms"] = tree_cpu_ms(b.proc.pid) - cpu0
            time.sleep(0.3)  # late console messages and requests
            evaluate(b, session, "1")  # drain what arrived meanwhile
            out["nav_load_ms"] = evaluate(
                b, session, "Math.round(performance.getEntriesByType('navigation')[0].loadEventEnd)")
            out["marker"] = evaluate(b, session, "window.__pwned === undefined ? null : String(window.__pwned)")
            out["ready"] = evaluate(b, session, "document.documentElement.getAttribute('data-report-ready') === '1'")
            out["counts"] = evaluate(b, session, "Object.fromEntries(Array.from(document.querySelectorAll("
                                     "'[data-count]')).map(e => [e.getAttribute('data-count'), e.textContent]))")
            out["images"] = evaluate(b, session, "document.images.length")
            out["scripts"] = evaluate(b, session, "document.scripts.length")
            out["tasks"] = evaluate(b, session, "document.querySelectorAll('details.task').length")
            out["text_has"] = {}
            for needle in args.expect_text:
                # Open every task first so that its body is rendered text too.
                out["text_has"][needle] = evaluate(
                    b, session, "document.querySelectorAll('details').forEach(d => d.open = true), "
                    "document.body.innerText.includes(%s)" % json.dumps(needle))
            if args.filter_category is not None:
                out["filtered"] = evaluate(
                    b, session, "(() => { const s = document.getElementById('f-cat'); s.value = %s; "
                    "s.dispatchEvent(new Event('change')); return Array.from(document.querySelectorAll("
                    "'details.task')).filter(d => !d.hidden).length; })()" % json.dumps(args.filter_category))
                out["shown_text"] = evaluate(b, session, "document.getElementById('shown').textContent")
                evaluate(b, session, "(() => { const s = document.getElementById('f-cat'); s.value = ''; "
                         "s.dispatchEvent(new Event('change')); document.querySelectorAll('details').forEach("
                         "d => d.open = false); scrollTo(0, 0); })()")
            if args.screenshot:
                top = evaluate(b, session, "window.scrollY") or 0  # the clip is in page coordinates
                shot = b.call("Page.captureScreenshot", {"format": "png", "clip": {
                    "x": 0, "y": top, "width": 1200, "height": 1500, "scale": args.screenshot_scale}}, session)
                with open(args.screenshot, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            evaluate(b, session, "1")
            requests, errors = [], []
            for m in b.events:
                meth, p = m.get("method"), m.get("params", {})
                if meth == "Network.requestWillBeSent":
                    u = p.get("request", {}).get("url", "")
                    if u.split("#")[0] != url.split("#")[0]:
                        requests.append(u)
                elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                    errors.append("console %s: %s" % (p.get("type"), json.dumps(p.get("args", []))[:500]))
                elif meth == "Runtime.exceptionThrown":
                    errors.append("exception: %s" % json.dumps(p.get("exceptionDetails", {}))[:500])
                elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                    e = p["entry"]
                    errors.append("log %s/%s: %s %s" % (e.get("level"), e.get("source"), e.get("text", "")[:400],
                                                         e.get("url", "")))
            out["requests"] = requests
            out["console_errors"] = errors
        finally:
            b.close()
            shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
