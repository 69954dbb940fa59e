"""Local copies of the CDN assets of folium maps, installed from npm, for offline browser tests.

A CDN review map (``review_map(..., offline=False)``; offline maps inline geosynth's vendored
copies and need none of this) loads its JavaScript and CSS from public CDNs (jsdelivr, cdnjs;
folium's other defaults also from code.jquery.com). The test machine only reaches package
registries, so :func:`install_assets` installs the npm packages behind those URLs into a cache
directory (keyed by the package list, outside the repo) and :func:`resolve` maps a CDN URL
(including the images and fonts the stylesheets reference) to the file in ``node_modules``.

Run ``python -m tests.browser.assets MAP.html ...`` to install the assets of saved CDN maps
and print the directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "asset_urls", "cache_root", "ensure_npm", "install_assets", "local_file", "npm_packages",
    "resolve",
]

#: cdnjs library/version -> (npm spec, folder of the CDN files inside the npm package).
#: cdnjs serves Leaflet.awesome-markers 2.0.2, which npm does not have; npm 2.0.4 and 2.0.5 hold
#: the same dist files (the plugin reports itself as 2.0.1 in all of them).
CDNJS = {
    ("Leaflet.awesome-markers", "2.0.2"): ("leaflet.awesome-markers@2.0.5", "dist"),
    ("d3", "3.5.5"): ("d3@3.5.5", ""),
}

_JSDELIVR = re.compile(r"^/npm/(?P<name>(?:@[^/@]+/)?[^/@]+)@(?P<version>[^/]+)/(?P<path>.+)$")
_CDNJS = re.compile(r"^/ajax/libs/(?P<lib>[^/]+)/(?P<version>[^/]+)/(?P<path>.+)$")
_JQUERY = re.compile(r"^/jquery-(?P<version>\d+\.\d+\.\d+)(?P<min>\.min)?\.js$")
_ASSET = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"(https?://[^\"]+)\"")


def resolve(url: str) -> tuple[str, str] | None:
    """Return (npm spec, path inside the package) of a CDN URL, or None if it is not one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    if parts.netloc == "cdn.jsdelivr.net":
        match = _JSDELIVR.match(parts.path)
        if match:
            return f"{match['name']}@{match['version']}", match["path"]
    elif parts.netloc == "cdnjs.cloudflare.com":
        match = _CDNJS.match(parts.path)
        if match and (match["lib"], match["version"]) in CDNJS:
            spec, folder = CDNJS[match["lib"], match["version"]]
            return spec, f"{folder}/{match['path']}".lstrip("/")
    elif parts.netloc == "code.jquery.com":
        match = _JQUERY.match(parts.path)
        if match:
            return f"jquery@{match['version']}", f"dist/jquery{match['min'] or ''}.js"
    return None


def asset_urls(html: str) -> list[str]:
    """The http(s) URLs of the ``<script src>`` and ``<link href>`` tags of a page, sorted."""
    return sorted(set(_ASSET.findall(html)))


def npm_packages(urls: Iterable[str]) -> list[str]:
    """Sorted npm specs behind ``urls``; raises ValueError naming URLs no package serves."""
    specs, unknown = set(), []
    for url in urls:
        found = resolve(url)
        if found is None:
            unknown.append(url)
        else:
            specs.add(found[0])
    if unknown:
        raise ValueError(f"no npm package is known for {unknown}; add them to tests/browser/"
                         "assets.py")
    return sorted(specs)


def cache_root() -> Path:
    """``$GEOSYNTH_TEST_ASSETS`` or ``~/.cache/geosynth-test-assets`` (outside the repo)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get("GEOSYNTH_TEST_ASSETS", default / "geosynth-test-assets"))


def _package_dir(node_modules: Path, spec: str) -> Path:
    name = spec.rsplit("@", 1)[0]
    return node_modules / name


def ensure_npm(timeout: float = 900) -> str | None:
    """Install Debian's npm if absent; return None, or why it cannot be installed (not root)."""
    if shutil.which("npm") is not None:
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return ("npm is absent (it installs the map's CDN assets) and cannot be installed "
                "here; install it with `apt-get install -y --no-install-recommends npm`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "npm"]
    if subprocess.run(install, env=env, capture_output=True, timeout=timeout).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=timeout,
                       check=True)
        subprocess.run(install, env=env, capture_output=True, timeout=timeout, check=True)
    return None


def install_assets(specs: Iterable[str], root: Path | None = None, timeout: float = 300) -> Path:
    """Install the npm packages ``specs`` once; return their ``node_modules`` directory.

    The directory is ``<root>/<hash of the sorted specs>/node_modules``; a second call with the
    same specs returns at once. The install goes to a temporary directory renamed into place,
    so an interrupted install is never mistaken for a complete one.
    """
    specs = sorted(set(specs))
    root = cache_root() if root is None else Path(root)
    key = hashlib.sha256("\n".join(specs).encode()).hexdigest()[:16]
    target = root / key
    if (target / "complete").exists():
        return target / "node_modules"
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError("npm is not on PATH; it installs the map's CDN assets")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts",
             "--loglevel=error", "--prefix", str(staging), *specs],
            check=True, capture_output=True, text=True, timeout=timeout,
        )
        for spec in specs:
            version = spec.rsplit("@", 1)[1]
            manifest = _package_dir(staging / "node_modules", spec) / "package.json"
            if json.loads(manifest.read_text())["version"] != version:
                raise RuntimeError(f"npm installed another version than {spec} ({manifest})")
        (staging / "complete").write_text("\n".join(specs) + "\n")
        try:
            staging.rename(target)
        except OSError:  # another process finished first
            if not (target / "complete").exists():
                raise
    except subprocess.CalledProcessError as err:
        raise RuntimeError(f"npm install {' '.join(specs)} failed:\n{err.stderr}") from err
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"


def local_file(node_modules: Path, url: str) -> Path | None:
    """File of ``node_modules`` that serves ``url``, or None."""
    found = resolve(url)
    if found is None:
        return None
    spec, inner = found
    package = _package_dir(node_modules, spec).resolve()
    path = (package / inner).resolve()
    if package not in path.parents or not path.is_file():
        return None
    return path


def main(argv: list[str]) -> int:
    """Install the assets of the saved maps ``argv`` and print the node_modules directory."""
    urls = [url for name in argv for url in asset_urls(Path(name).read_text(encoding="utf-8"))]
    print(install_assets(npm_packages(urls)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
