"""Open the built documentation site in headless Chromium and check what a reader sees.

    python -m mkdocs build && python tools/check_site.py site [--screenshots DIR]

Serves SITE on a free port of 127.0.0.1 and drives Chromium over the DevTools protocol
(`--remote-debugging-pipe`: the standard library is enough). For the start page, a guide
and an API page it checks that the page rendered (its title, its article text and the
navigation are in the DOM after the scripts ran, and no script threw), that every
navigation link answers 200 from the server, and it saves a screenshot. Then it types a
query into the search box and waits for results, which shows that the search index loaded
and answers. At the end, no file the browser asked for may have been missing. The
screenshots go to DIR (default: a new temporary folder, outside the repository); their
paths are printed. Needs Chromium (Debian's `chromium` package).
"""
import argparse
import base64
import fcntl
import functools
import http.server
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PAGES = [
    ("start page", "", "kiln"),
    ("guide", "guides/hybridize/", "Hybridize and what it keeps"),
    ("API page", "reference/np/", "kiln.np"),
]
QUERY = "hybridize"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1280,1600", "--remote-debugging-pipe"]
NAV_LINKS = ("Array.from(document.querySelectorAll('a.md-nav__link, a.md-tabs__link, "
             "a.md-footer__link')).map(a => a.href)")


class Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves the site and remembers every request's path and status."""
    requests = []

    def log_message(self, fmt, *args):
        pass

    def send_response(self, code, message=None):
        Recorder.requests.append((self.path, code))
        super().send_response(code, message)


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass      # the browser closing a connection early is not the site's fault


def serve(site):
    server = QuietServer(("127.0.0.1", 0), functools.partial(Recorder, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Browser:
    """Headless Chromium spoken to over --remote-debugging-pipe (fds 3 and 4 of the child:
    JSON messages, each ended by a NUL byte)."""

    def __init__(self, exe, profile):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():      # in the child: the pipe ends become fds 3 and 4 (via fds >= 10)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child_r, from_child_w)]
            for fd, target in zip(high, (3, 4)):
                os.dup2(fd, target)
        # close_fds=False keeps fds 3 and 4 (dup2 makes them inheritable); every other fd
        # of this process is non-inheritable (PEP 446) and closes on exec
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}"],
                                     close_fds=False, preexec_fn=wire,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer, self._next_id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime"):
            self.call(f"{domain}.enable", session=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method, session=False, timeout=30, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for k, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(k)
            self.events.append(self._read_message(deadline))

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for_event("Page.loadEventFired")

    def poll(self, expression, timeout=20):
        """The value of `expression` once it is truthy, or its last value at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    def script_errors(self):
        return [e["params"]["exceptionDetails"].get("text", "?") for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"]

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def check_page(browser, base, path, title, shots):
    problems, url = [], base + path
    browser.open(url)
    rendered = browser.poll("document.querySelector('article.md-content__inner') !== null "
                            "&& document.querySelectorAll('.md-nav__link').length > 0")
    if not rendered:
        problems.append(f"{url}: no article or navigation in the rendered page")
    page_title = browser.evaluate("document.title")
    heading = browser.evaluate("(document.querySelector('article h1') || {}).textContent")
    if title not in (heading or "") or "kiln" not in page_title:
        problems.append(f"{url}: heading {heading!r} / title {page_title!r}, expected {title!r}")
    problems += [f"{url}: a script threw: {e}" for e in browser.script_errors()]
    links = sorted({h.split("#")[0] for h in browser.evaluate(NAV_LINKS) or []})
    for link in links:
        if link.startswith(base) and status(link) != 200:
            problems.append(f"{url}: navigation link {link} answers {status(link)}")
    shot = os.path.join(shots, (path.strip("/").replace("/", "-") or "index") + ".png")
    browser.screenshot(shot)
    if os.path.getsize(shot) < 10_000:
        problems.append(f"{url}: the screenshot {shot} is nearly empty")
    return problems, shot, len(links)


def check_search(browser, base):
    """Type a query into the search box; the results show that the index loaded."""
    browser.open(base)
    browser.evaluate(f"""(() => {{
        const box = document.querySelector('.md-search__input');
        box.focus(); box.value = {json.dumps(QUERY)};
        for (const kind of ['input', 'keyup'])
            box.dispatchEvent(new Event(kind, {{bubbles: true}}));
        return true; }})()""")
    return browser.poll("document.querySelectorAll('.md-search-result__item').length")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("site", help="the built site (mkdocs build's site_dir)")
    p.add_argument("--screenshots", help="folder for the PNGs (default: a temporary one)")
    a = p.parse_args(argv)
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("check_site: no chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    shots = a.screenshots or tempfile.mkdtemp(prefix="kiln-site-shots-")
    os.makedirs(shots, exist_ok=True)
    server = serve(os.path.abspath(a.site))
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(exe, profile)
        try:
            for what, path, title in PAGES:
                found, shot, n_links = check_page(browser, base, path, title, shots)
                problems += found
                print(f"{what}: {base + path} rendered, {n_links} navigation links answer, "
                      f"screenshot {shot}")
            results = check_search(browser, base)
            if results:
                print(f"search: {results} results for {QUERY!r}")
            else:
                problems.append(f"the search for {QUERY!r} gave no results (index not loaded?)")
        finally:
            browser.close()
    server.shutdown()
    missing = sorted({path for path, code in Recorder.requests if code >= 400})
    problems += [f"the browser asked for a missing file: {m}" for m in missing]
    for line in problems:
        print("PROBLEM:", line)
    print("site check:", "passed" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
