"""Drive Debian's headless Chromium: screenshots and layout measurements of a report page.

No browser is downloaded: ``/usr/bin/chromium`` (Debian package ``chromium``) is used,
and tests skip with a printed reason where it is missing. Each run gets a fresh profile
and no network features (no QUIC, background networking, component updates or sync).

Measurements: a copy of the page, with a script appended (and the page's
Content-Security-Policy, which forbids scripts, removed from the copy only), writes the
boxes of the elements a test asks about into a ``<pre id="xcompat-measure">``; Chromium's
``--dump-dom`` prints the DOM after the script ran.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
MEASURE_JS = r"""
(function () {
  function box(el) {
    var r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    return {top: r.top + scrollY, left: r.left, width: r.width, height: r.height, right: r.right,
            display: cs.display, opacity: parseFloat(cs.opacity), background: cs.backgroundColor,
            color: cs.color, lineHeight: parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.45,
            text: (el.innerText || el.textContent || "").trim().slice(0, 400), cls: el.className};
  }
  function all(sel) { return Array.prototype.map.call(document.querySelectorAll(sel), box); }
  var out = {
    innerWidth: innerWidth, scrollWidth: document.documentElement.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth, height: document.documentElement.scrollHeight,
    verdict: all("#verdict"), problems: all("ol.problems > li"), quiet: all("#quiet"),
    grid: all("#grid"), gridCells: all("#grid td.cell"), optionalCells: all("#grid td.cell.optional"),
    legend: all("#legend"), legendChips: all("#legend .chip"),
    summaries: [], external: []
  };
  document.querySelectorAll("details.failure > summary").forEach(function (s) {
    var chip = s.querySelector(".chip"), code = s.querySelector("code");
    out.summaries.push({summary: box(s), chip: chip && box(chip), code: code && box(code)});
  });
  document.querySelectorAll("[src],link[href],img,script[src],iframe,object,embed").forEach(function (el) {
    out.external.push(el.outerHTML.slice(0, 200));
  });
  var pre = document.createElement("pre");
  pre.id = "xcompat-measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def available() -> bool:
    return CHROMIUM.is_file()


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="xcompat-chromium-") as profile:
        cmd = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def measure(page: Path, width: int = 800, height: int = 900) -> dict[str, Any]:
    """Layout facts of ``page`` rendered ``width`` pixels wide."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    probe = page.with_name(page.stem + ".measure.html")
    probe.write_text(text.replace("</body>", f"<script>{MEASURE_JS}</script></body>"), encoding="utf-8")
    done = _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()])
    m = re.search(r'<pre id="xcompat-measure">(.*?)</pre>', done.stdout, re.DOTALL)
    if not m:
        raise AssertionError(f"chromium printed no measurements (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, target: Path, width: int = 800, height: int = 1200) -> Path:
    """A PNG of the page's top ``height`` pixels at ``width``; returns ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    done = _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", f"--screenshot={target}", page.as_uri()])
    if not target.is_file():
        raise AssertionError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return target


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path} is not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def copy_if_asked(path: Path, folder: str | None) -> None:
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)
