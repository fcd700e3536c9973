#!/usr/bin/env python3
"""ui_browser.py — the cluster page in a real browser, for tests/e2e/ui.sh.

    ui_browser.py URL TOKEN SPKI_PIN OUT_JSON [--screenshot PNG] [--until JS] [--state S] [--timeout S]

Starts Debian's chromium headless and drives it over the DevTools
protocol on a pipe (--remote-debugging-pipe: JSON messages ended by a NUL
byte, commands on fd 3, answers and events on fd 4), so no port is opened
and no client library is needed.  The page is opened at URL#token=TOKEN
(the fragment never leaves the browser; the page takes it and removes
it).  The controller's certificate is trusted by the pin of its key
(SPKI_PIN, base64 of the SHA-256 of its SubjectPublicKeyInfo), not by
turning verification off.

Then, every 200 ms until TIMEOUT (30 s): the page is read back (what it
shows, from its data-* attributes: nodes, namespaces and their pods,
services, the reachability matrix, the live drops) and, once its state is
--state ("ready"; "login" for a page signed out) and the JS expression
--until (if any) is true on the page, that
reading is written to OUT_JSON, the screenshot taken, and the exit is 0.
Exit 1 on timeout (the last reading is written all the same), 2 on a
usage or browser error.  The browser's profile lives in a temporary
directory, removed after; the browser is killed by its PID at the end.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

READ = r"""(() => {
  const txt = (e, sel) => { const x = e.querySelector(sel); return x ? x.textContent : ""; };
  const st = document.querySelector('#state');
  return JSON.stringify({
    state: st ? st.dataset.state : "",
    title: document.title,
    mode: txt(document, '#mode'),
    location: location.href,
    nodes: [...document.querySelectorAll('[data-node]')].map(r => ({
      node: r.dataset.node, ip: txt(r, '.ip'), subnet: txt(r, '.subnet'), pods: txt(r, '.pods') })),
    namespaces: [...document.querySelectorAll('[data-namespace]')].map(d => ({
      namespace: d.dataset.namespace, vnid: d.dataset.vnid,
      pods: [...d.querySelectorAll('[data-pod]')].map(r => ({ pod: r.dataset.pod, ip: txt(r, '.ip'), node: txt(r, '.node') })) })),
    services: [...document.querySelectorAll('[data-service]')].map(r => ({
      service: r.dataset.service, clusterIP: txt(r, '.cluster-ip'), backends: txt(r, '.backends') })),
    reach: [...document.querySelectorAll('[data-from]')].map(c => ({ from: c.dataset.from, to: c.dataset.to, reach: c.dataset.reach })),
    drops: [...document.querySelectorAll('[data-drop]')].map(r => ({ reason: r.dataset.drop, text: r.textContent })),
    dropsState: txt(document, '#drops-state'),
  });
})()"""


class Browser:
    def __init__(self, pin):
        # Debian's binary itself: its /usr/bin/chromium launcher is a shell script
        exe = "/usr/lib/chromium/chromium" if os.access("/usr/lib/chromium/chromium", os.X_OK) else \
            shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise RuntimeError("chromium is not installed (scripts/deps.sh installs it)")
        self.profile = tempfile.mkdtemp(prefix="weft-ui-browser.")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # the child's fds 3 and 4 are the pipe's ends
        def child_fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)	# the pipes may be 3 and 4 already
            os.dup2(a, 3)
            os.dup2(b, 4)
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-sync", "--disable-component-update", "--remote-debugging-pipe",
                "--user-data-dir=" + self.profile, "--window-size=1280,1700",
                "--ignore-certificate-errors-spki-list=" + pin, "about:blank"]
        # close_fds=False: the fds made 3 and 4 in child_fds stay open across exec
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.profile, "log"), "w"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buf = b""

    def call(self, method, params=None, session=None, timeout=20):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe: " + self.log_tail())
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            ans = json.loads(raw)
            if ans.get("id") == self.next_id:
                if "error" in ans:
                    raise RuntimeError(method + ": " + json.dumps(ans["error"]))
                return ans.get("result", {})
        raise RuntimeError(method + ": no answer in %d s" % timeout)

    def log_tail(self):
        try:
            with open(os.path.join(self.profile, "log")) as f:
                return f.read()[-600:]
        except OSError:
            return ""

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("pin")
    ap.add_argument("out")
    ap.add_argument("--screenshot")
    ap.add_argument("--until", default="true")
    ap.add_argument("--state", default="ready", help="the page state to wait for (ready, login)")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args(argv)
    try:
        b = Browser(a.pin)
    except Exception as e:
        print("ui_browser: %s" % e, file=sys.stderr)
        return 2
    rc = 1
    try:
        target = b.call("Target.createTarget", {"url": a.url + "#token=" + a.token})["targetId"]
        session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        deadline = time.time() + a.timeout
        reading = None
        while time.time() < deadline:
            r = b.call("Runtime.evaluate", {"expression": READ, "returnByValue": True}, session)
            value = r.get("result", {}).get("value")
            if value:
                reading = json.loads(value)
                if reading["state"] == a.state:
                    ok = b.call("Runtime.evaluate", {"expression": "!!(" + a.until + ")", "returnByValue": True}, session)
                    if ok.get("result", {}).get("value") is True:
                        rc = 0
                        break
            time.sleep(0.2)
        with open(a.out, "w") as f:
            json.dump(reading, f, indent=1)
        if a.screenshot:
            shot = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
            import base64
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        if rc:
            print("ui_browser: the page was not ready (%s) within %g s; last reading in %s"
                  % (reading and reading.get("state"), a.timeout, a.out), file=sys.stderr)
    except Exception as e:
        print("ui_browser: %s" % e, file=sys.stderr)
        rc = 2
    finally:
        b.close()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
