"""Open the built documentation site in headless Chromium and check what a reader sees.

    python -m mkdocs build && python tools/check_site.py site [--screenshots DIR]

Serves SITE on a free port of 127.0.0.1, then for the start page, a guide and an API page:
Chromium renders the page (its DOM after scripts ran must hold the page's title, article
text and navigation), the search answers a query (the search index loaded and gave
results), every navigation link on the page answers 200 from the server, and no file the
page asked for was missing. A screenshot of each page goes to DIR (default: a temporary
folder outside the repository; the paths are printed). Needs Debian's `chromium`.
"""
import argparse
import functools
import html.parser
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

PAGES = [
    ("start page", "", "kiln"),
    ("guide", "guides/hybridize/", "Hybridize and what it keeps"),
    ("API page", "reference/np/", "kiln.np"),
]
SEARCH = ("search", "?q=hybridize", "md-search-result__item")
# the flags this machine needs (no sandbox as root; no background connections, which its
# closed network refuses)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1280,1600"]


class Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves the site and remembers every request's path and status."""
    requests = []

    def log_message(self, fmt, *args):
        pass

    def send_response(self, code, message=None):
        Recorder.requests.append((self.path, code))
        super().send_response(code, message)


class Links(html.parser.HTMLParser):
    """The hrefs of the navigation: the tabs, the side navigation and the page's own links
    to other pages (the header's and footer's)."""

    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = a.get("class") or ""
        if tag == "a" and a.get("href") and any(c in classes for c in (
                "md-nav__link", "md-tabs__link", "md-footer__link", "md-header__button")):
            self.hrefs.append(a["href"])


def chromium(exe, url, profile, *extra):
    cmd = [exe, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=8000", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def serve(site):
    handler = functools.partial(Recorder, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def check_page(exe, base, path, title, shots, profile):
    problems = []
    url = base + path
    dom = chromium(exe, url, profile, "--dump-dom").stdout
    for needed in ("<title>", "md-content__inner", "md-nav__link", title):
        if needed not in dom:
            problems.append(f"{url}: the rendered page lacks {needed!r}")
    parser = Links()
    parser.feed(dom)
    for href in sorted(set(parser.hrefs)):
        target = urllib.parse.urljoin(url, href).split("#")[0]
        if target.startswith(base) and status(target) != 200:
            problems.append(f"{url}: navigation link {href} answers {status(target)}")
    shot = os.path.join(shots, (path.strip("/").replace("/", "-") or "index") + ".png")
    chromium(exe, url, profile, f"--screenshot={shot}")
    if not os.path.exists(shot) or os.path.getsize(shot) < 10_000:
        problems.append(f"{url}: no screenshot (or an empty one) at {shot}")
    return problems, shot, len(set(parser.hrefs))


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
        for what, path, title in PAGES:
            found, shot, n_links = check_page(exe, base, path, title, shots, profile)
            problems += found
            print(f"{what}: {base + path} rendered, {n_links} navigation links checked, "
                  f"screenshot {shot}")
        what, query, result_class = SEARCH
        dom = chromium(exe, base + query, profile, "--dump-dom").stdout
        if result_class not in dom:
            problems.append(f"{base + query}: the search gave no results (index not loaded?)")
        else:
            print(f"search: {dom.count(result_class)} results for 'hybridize'")
    server.shutdown()
    missing = sorted({path for path, code in Recorder.requests if code >= 400})
    problems += [f"the browser asked for a missing file: {m}" for m in missing]
    for line in problems:
        print("PROBLEM:", line)
    print("site check:", "passed" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
