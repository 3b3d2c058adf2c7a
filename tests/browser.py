"""Reports looked at in a real headless Chromium: find the browser (skip without one, unless CI forbids it) and
measure a page's layout at a window width.

``layout(page, ...)`` opens a copy of the page with a script appended that measures the laid-out page and writes
its findings into the DOM as JSON, and reads them back through ``--dump-dom``: the page's ``scrollWidth`` (wider
than the window means the reader scrolls the whole page sideways), the elements that stick out of the window
outside any box of their own that scrolls, and the table cells that wrap onto more lines although they are not
marked ``long`` (cells meant to wrap carry that class).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from realcluster import REQUIRE_ENV

BROWSER_TIMEOUT_S = 120
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")

# Runs where it stands, at the end of the body: the page is parsed and styled, and asking for sizes lays it out.
_MEASURE = """<script>(function () {
  var root = document.documentElement, width = root.clientWidth;
  function scrolls(e) {
    for (var a = e.parentElement; a; a = a.parentElement) {
      var o = getComputedStyle(a).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") return true;
    }
    return false;
  }
  function name(e) {
    return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "");
  }
  var wide = [], wrapped = [];
  document.querySelectorAll("body *").forEach(function (e) {
    if (e.getBoundingClientRect().right > width + 0.5 && !scrolls(e)) wide.push(name(e));
  });
  document.querySelectorAll("td").forEach(function (td) {
    if (td.classList.contains("long")) return;
    var range = document.createRange(); range.selectNodeContents(td);
    var tops = {};
    Array.prototype.forEach.call(range.getClientRects(), function (r) { tops[Math.round(r.top)] = 1; });
    if (Object.keys(tops).length > 1) wrapped.push(td.textContent);
  });
  var out = document.createElement("pre"); out.id = "rocketspec-layout";
  out.textContent = JSON.stringify({scroll_width: root.scrollWidth, client_width: width,
                                    wide: wide.slice(0, 20), wrapped: wrapped.slice(0, 20)});
  document.body.appendChild(out);
})();</script>"""
_FOUND = re.compile(r'<pre id="rocketspec-layout">(.*?)</pre>', re.S)


def chromium() -> str:
    """The headless browser, or skip (fail under ROCKETSPEC_REQUIRE_REAL=1) saying there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "no headless Chromium here (Debian package chromium) to look at the HTML report"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)")
        pytest.skip(reason)
    return found


def flags(profile: Path) -> list[str]:
    """The command-line flags of a quiet headless run with its own profile directory."""
    return [*FLAGS, f"--user-data-dir={profile}"]


def layout(page: Path, work: Path, width: int = 1280, height: int = 2000) -> dict[str, Any]:
    """The page laid out in a ``width`` x ``height`` window: ``scroll_width``, ``client_width``, ``wide`` (elements
    past the window's right edge outside a scrolling box) and ``wrapped`` (the text of cells that wrap unasked)."""
    work.mkdir(parents=True, exist_ok=True)
    probe = work / f"layout-{page.stem}.html"
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", _MEASURE + "</body>") if "</body>" in text else text + _MEASURE,
                     encoding="utf-8")
    dom = subprocess.run([chromium(), *flags(work / "profile"), f"--window-size={width},{height}", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S,
                         check=True).stdout
    found = _FOUND.search(dom)
    assert found is not None, f"the layout script did not run on {page}: {dom[-500:]}"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result
