"""report.html in a real headless Chromium: the layout a reviewer sees, measured at 800 px.

Three pages: the demo report, the sample's 56-cell plan, a crashing suite run through
``xcompat test``. Screenshots are written for each (set XCOMPAT_SCREENSHOT_DIR to keep
them); assertions are on rendered element boxes, not on the HTML text.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import chromium
from tests.helpers import report_pages
from xcompat.report import write_html

pytestmark = pytest.mark.skipif(
    not chromium.available(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)"
)
WIDTH = 800


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    reports = {
        "demo": report_pages.demo(),
        "plan56": report_pages.plan56(),
        "crash": report_pages.crash(folder / "crash-suite"),
    }
    out = {}
    for name, report in reports.items():
        page = write_html(report, folder / f"report-{name}.html")
        shot = chromium.screenshot(page, folder / f"report-{name}.png", width=WIDTH, height=1100)
        chromium.copy_if_asked(shot, os.environ.get("XCOMPAT_SCREENSHOT_DIR"))
        print(f"screenshot: {shot}")
        out[name] = {"report": report, "page": page, "shot": shot, "m": chromium.measure(page, WIDTH)}
    return out


@pytest.mark.parametrize("name", ["demo", "plan56", "crash"])
def test_page_fits_800_pixels_without_horizontal_scrolling(pages, name):
    m = pages[name]["m"]
    assert m["innerWidth"] == WIDTH
    assert m["scrollWidth"] <= WIDTH, f"{name}: the page is {m['scrollWidth']} px wide at {WIDTH} px"
    assert m["external"] == []  # self-contained: nothing loaded from anywhere


@pytest.mark.parametrize("name", ["demo", "plan56", "crash"])
def test_the_problems_and_their_fixes_come_before_the_grid(pages, name):
    m = pages[name]["m"]
    assert m["problems"], f"{name}: no problem listed"
    last = max(p["top"] + p["height"] for p in m["problems"])
    assert last <= m["grid"][0]["top"]
    assert m["verdict"][0]["top"] < m["problems"][0]["top"]
    assert all("To fix:" in p["text"] for p in m["problems"])


@pytest.mark.parametrize("name", ["demo", "plan56", "crash"])
def test_legend_chips_are_inline_not_full_width_bars(pages, name):
    m = pages[name]["m"]
    chips = m["legendChips"]
    assert len(chips) >= 9
    for chip in chips:
        assert chip["display"] == "inline-block"
        assert chip["width"] < WIDTH / 3
        assert chip["height"] < 2 * chip["lineHeight"]
    rows = {round(c["top"]) for c in chips}
    assert len(rows) <= 3, f"legend chips on {len(rows)} lines"
    # error, timeout and leaked have colours of their own
    colours = {c["cls"].split()[-1]: c["background"] for c in chips}
    picked = [colours[s] for s in ("error", "timeout", "leaked", "failed", "passed")]
    assert len(set(picked)) == len(picked) and "rgba(0, 0, 0, 0)" not in picked


def test_failure_summaries_stay_on_one_line(pages):
    for name in ("plan56", "crash"):
        summaries = pages[name]["m"]["summaries"]
        assert summaries
        for s in summaries:
            assert abs(s["chip"]["top"] - s["code"]["top"]) < s["chip"]["height"], f"{name}: chip and name on different lines"
            assert s["summary"]["height"] < 3.2 * s["summary"]["lineHeight"]


def test_plan56_grid_names_every_cell_and_dims_the_optional_ones(pages):
    m = pages["plan56"]["m"]
    assert len(m["gridCells"]) == 56
    optional = m["optionalCells"]
    assert len(optional) == 31 and all(c["opacity"] < 0.8 for c in optional)
    required = [c for c in m["gridCells"] if "optional" not in c["cls"]]
    assert len(required) == 25 and all(c["opacity"] == 1 for c in required)
    assert m["quiet"] and "31 optional cells have no result" in m["quiet"][0]["text"]
    assert m["quiet"][0]["opacity"] < 0.8
    texts = [p["text"] for p in m["problems"]]
    assert "test_scaled_add_large" in texts[0] and "crashed" in texts[0]
    assert "test_threads" in texts[1]
    assert "no result" in texts[2]


def test_crash_page_leads_with_the_crash_and_hides_framework_frames(pages):
    page = pages["crash"]["page"].read_text(encoding="utf-8")
    m = pages["crash"]["m"]
    assert "test_segfault" in m["problems"][0]["text"] and "SIGSEGV" in m["problems"][0]["text"]
    assert "frame(s) of pytest, pluggy and xcompat hidden" in page
    assert "pluggy/_callers.py" not in page and "_pytest/runner.py" not in page
    assert "make assert sum(values) == 4" in m["problems"][1]["text"].replace("\n", " ")


@pytest.mark.parametrize("name", ["demo", "plan56", "crash"])
def test_screenshots_are_written(pages, name):
    shot: Path = pages[name]["shot"]
    assert chromium.png_size(shot) == (WIDTH, 1100)
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one


def test_crash_page_names_the_test_frame_and_shows_the_output(pages):
    page = pages["crash"]["page"].read_text(encoding="utf-8")
    m = pages["crash"]["m"]
    assert "tests/test_native.py:11 in test_segfault" in m["problems"][0]["text"]
    assert "line 11 in test_segfault" in page and "reading address 0 through ctypes" in page
