"""Headless Debian Chromium driven by Playwright, with the network blocked or served from npm.

The machine running the tests reaches package registries only, and Playwright's own browser
download is blocked, so the tests use Debian's ``chromium`` package (installed by
:func:`ensure_chromium` when absent and running as root). :class:`BlockedNetwork` refuses every
request but the page itself (offline maps must need nothing else); :class:`OfflineRoutes`
answers a CDN page's requests from ``node_modules`` (see :mod:`tests.browser.assets`).
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import subprocess
from pathlib import Path

from tests.browser.assets import local_file

__all__ = ["BlockedNetwork", "CHROMIUM", "LAUNCH_ARGS", "OfflineRoutes", "ensure_chromium"]

CHROMIUM = Path("/usr/bin/chromium")

_CONTENT_TYPES = {
    ".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".svg": "image/svg+xml",
    ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf",
}

#: Flags that keep Chromium quiet on a closed network: no QUIC probing, no component updates,
#: sync or other background requests, no sandbox (containers run as root), no GPU.
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_chromium(timeout: float = 900) -> str | None:
    """Install Debian's chromium if absent; return None, or why it cannot be installed.

    Installing needs root (``apt-get install -y --no-install-recommends chromium``); the package
    lists are refreshed once if the first attempt fails.
    """
    if CHROMIUM.exists():
        return None
    if os.geteuid() != 0:
        return (f"{CHROMIUM} is absent and the tests do not run as root; install it with "
                "`apt-get install -y --no-install-recommends chromium`")
    if shutil.which("apt-get") is None:
        return f"{CHROMIUM} is absent and apt-get is not available to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    result = subprocess.run(install, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=timeout,
                       check=True)
        subprocess.run(install, env=env, capture_output=True, text=True, timeout=timeout,
                       check=True)
    if not CHROMIUM.exists():
        raise RuntimeError(f"apt-get installed chromium but {CHROMIUM} does not exist")
    return None


class OfflineRoutes:
    """A ``page.route("**/*", ...)`` handler serving CDN URLs from ``node_modules``.

    Local pages (``file:``, ``data:``, ``blob:``) pass through. Any other request that no
    local file serves is aborted and recorded in :attr:`unserved`, which tests assert empty;
    :attr:`served` lists the URLs answered from ``node_modules``.
    """

    def __init__(self, node_modules: Path) -> None:
        self.node_modules = Path(node_modules)
        self.served: list[str] = []
        self.unserved: list[str] = []

    def __call__(self, route) -> None:
        url = route.request.url
        if url.split(":", 1)[0] in ("file", "data", "blob"):
            route.continue_()
            return
        path = local_file(self.node_modules, url)
        if path is None:
            self.unserved.append(url)
            route.abort("internetdisconnected")
            return
        self.served.append(url)
        # Fonts are fetched in CORS mode (the page's origin is "null" for file://).
        content_type = (_CONTENT_TYPES.get(path.suffix)
                        or mimetypes.guess_type(path.name)[0] or "application/octet-stream")
        route.fulfill(path=path, content_type=content_type,
                      headers={"Access-Control-Allow-Origin": "*"})


class BlockedNetwork:
    """Record every request of a browser context and let only the page itself through.

    Install with :meth:`install` on a fresh context. The page's own ``file:`` URL and ``data:``
    URLs (inline images) are allowed; any other request -- to a host, to another file (a
    relative reference), ``blob:`` or ``ws:`` -- is aborted and recorded in :attr:`refused`,
    which tests assert empty. :attr:`requests` lists every request the context saw, allowed or
    not (Chromium routes some schemes past ``route``, but not past the ``request`` event).
    """

    def __init__(self, page_url: str) -> None:
        self.page_url = page_url
        self.requests: list[str] = []
        self.refused: list[str] = []

    def allowed(self, url: str) -> bool:
        return url == self.page_url or url.startswith("data:")

    def install(self, context) -> None:
        context.on("request", lambda request: self.requests.append(request.url))
        context.route("**/*", self)

    def __call__(self, route) -> None:
        url = route.request.url
        if self.allowed(url):
            route.continue_()
            return
        self.refused.append(url)
        route.abort("blockedbyclient")

    @property
    def outside(self) -> list[str]:
        """Requests other than the page and ``data:`` URLs (refused or not)."""
        return [url for url in self.requests if not self.allowed(url)]
