"""Open the built documentation in headless Chromium and fail on what a reader would see broken.

Serves the built site (``docs/_build/html`` by default) on a local port and opens the index,
one API page and one gallery page in Chromium through Playwright.  Fails (exit code 1) on a
JavaScript error, a console error, a local resource that does not load (status >= 400 or a
failed request), an image that does not render, or an internal link whose page or anchor
does not exist (every internal link of the three pages is followed).  Requests to other
hosts (the MathJax CDN) are not made: the check runs offline.

Usage::

    python -m sphinx -b html docs docs/_build/html
    python docs/check_site.py [--build-dir docs/_build/html] [--chromium /usr/bin/chromium]

Needs ``pip install playwright`` and a Chromium (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import sys
import threading
import urllib.parse

PAGES = ("index.html", "generated/psdsos.estimators.PSDRegressor.html",
         "auto_examples/sos_constraint_fit.html")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def serve(root):
    """A quiet HTTP server on 127.0.0.1 (a free port) in a daemon thread; returns it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=root))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def anchors(html):
    return set(re.findall(r'\bid="([^"]+)"', html)) | set(re.findall(r'\bname="([^"]+)"', html))


def check(build_dir, chromium, pages=PAGES):
    from playwright.sync_api import sync_playwright

    problems = []
    httpd = serve(build_dir)
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page()
            # offline: other hosts are not contacted (reported once per host)
            external = set()

            def route(r):
                if r.request.url.startswith(base):
                    r.continue_()
                else:
                    external.add(urllib.parse.urlsplit(r.request.url).netloc)
                    r.abort()

            page.route("**/*", route)
            current = {"page": None}
            page.on("pageerror", lambda e: problems.append(f"{current['page']}: JavaScript "
                                                          f"error: {e}"))
            page.on("console", lambda m: m.type == "error" and m.location.get(
                "url", "").startswith(base) and problems.append(
                    f"{current['page']}: console error: {m.text}"))
            page.on("requestfailed", lambda r: r.url.startswith(base) and problems.append(
                f"{current['page']}: request failed: {r.url}"))
            page.on("response", lambda r: r.url.startswith(base) and r.status >= 400
                    and problems.append(f"{current['page']}: {r.status} for {r.url}"))
            links = set()
            for name in pages:
                current["page"] = name
                resp = page.goto(base + name, wait_until="networkidle")
                if resp is None or resp.status != 200:
                    problems.append(f"{name}: not served ({resp and resp.status})")
                    continue
                broken = page.evaluate(
                    "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth"
                    " > 0)).map(i => i.getAttribute('src'))")
                problems += [f"{name}: image not rendered: {src}" for src in broken]
                for href in page.evaluate(
                        "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"):
                    if href.startswith(base):
                        links.add((name, href))
            browser.close()
        if external:
            print("not contacted (other hosts): " + ", ".join(sorted(external)))
        html_cache = {}
        for name, href in sorted(links):
            url, _, frag = href.partition("#")
            rel = urllib.parse.unquote(urllib.parse.urlsplit(url).path.lstrip("/")) or "index.html"
            path = os.path.join(build_dir, rel)
            if os.path.isdir(path):
                path = os.path.join(path, "index.html")
            if not os.path.isfile(path):
                problems.append(f"{name}: broken link {href}")
                continue
            if frag and path.endswith(".html"):
                if path not in html_cache:
                    with open(path, encoding="utf-8") as fh:
                        html_cache[path] = anchors(fh.read())
                if urllib.parse.unquote(frag) not in html_cache[path]:
                    problems.append(f"{name}: missing anchor {href}")
        print(f"checked {len(pages)} pages and {len(links)} internal links")
    finally:
        httpd.shutdown()
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "_build",
                                                        "html"))
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM") or shutil.which(
        "chromium") or "/usr/bin/chromium")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.build_dir, "index.html")):
        ap.error(f"no built site in {args.build_dir}: build it first (python -m sphinx -b "
                 f"html docs {args.build_dir})")
    problems = check(args.build_dir, args.chromium)
    for line in problems:
        print("FAIL", line)
    print("site check:", "FAILED" if problems else "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
