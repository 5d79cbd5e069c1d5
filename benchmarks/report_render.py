"""Report page in a real browser: headless Chromium renders report.html at 1400 px.

Builds the report of a small experiment (or of ``--store DIR``), loads ``report.html`` in
headless Chromium (Debian's ``chromium`` package) with a 1400x1000 window, and measures the
page's layout width (``document.documentElement.scrollWidth``: wider than the window means a
sideways scroll), how much of the widest visible table its scroll box hides, and the render
time; ``--screenshot FILE`` also saves a PNG of the page.
Target: no sideways scroll and no hidden column at 1400 px (the per-run table, folded by
default, may scroll). The page has no script of its own: a copy with one
measuring line is what is loaded.

Usage: ``python benchmarks/report_render.py [--store DIR] [--screenshot FILE]``; the last line
is one JSON object ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

VIEWPORT = (1400, 1000)
MEASURE = (
    "<script>var o = 0; document.querySelectorAll('.scroll').forEach(function (e) {"
    " if (e.closest('details:not([open])') === null) {"
    " o = Math.max(o, e.scrollWidth - e.clientWidth); } });"
    "document.title = 'W=' + document.documentElement.scrollWidth + ';H=' + "
    "document.documentElement.scrollHeight + ';O=' + o;</script>"
)


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no Chromium found: apt-get install chromium")


def small_store(folder: Path) -> Path:
    """A store with a report: seven architectures, two seeds, 30 jobs on 512 GPUs."""
    from lumoscore.cli import main

    exp = folder / "exp.toml"
    exp.write_text(
        'name = "render"\ngpus = 512\narchitectures = ["best", "clos-51.2T-3tier", '
        '"clos-25.6T-3tier", "clos-25.6T-4tier", "lumoscore-51.2T-tau2", '
        '"lumoscore-51.2T-tau1", "lumoscore-25.6T-tau1"]\nseeds = 2\n[trace]\njobs = 30\n'
    )
    out = folder / "store"
    try:
        main(["run", str(exp), "--out", str(out)])
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="a result store with report/report.html")
    ap.add_argument("--screenshot", type=Path, help="save a PNG of the page")
    args = ap.parse_args()
    exe = browser()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        store = args.store or small_store(tmp)
        page = (store / "report" / "report.html").read_text(encoding="utf-8")
        probe = tmp / "probe.html"
        probe.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
        flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}"]  # fmt: skip
        t0 = time.perf_counter()
        dom = subprocess.run(
            [*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, check=True
        ).stdout
        render_s = time.perf_counter() - t0
        match = re.search(r"<title>W=(\d+);H=(\d+);O=(\d+)</title>", dom)
        if match is None:
            raise SystemExit("the page did not report its size")
        width, height, hidden = (int(g) for g in match.groups())
        if args.screenshot is not None:
            subprocess.run(
                [*flags, f"--screenshot={args.screenshot.resolve()}", probe.as_uri()],
                capture_output=True,
                check=True,
            )
    print(f"report.html at {VIEWPORT[0]} px: layout width {width} px, height {height} px, "
          f"widest table hidden by {hidden} px, rendered in {render_s:.1f} s")  # fmt: skip
    figures = {"layout_width_px": width, "layout_height_px": height,
               "summary_hidden_px": hidden, "render_s": round(render_s, 2)}  # fmt: skip
    targets = {"layout_width_px": VIEWPORT[0], "summary_hidden_px": 0}
    met = width <= VIEWPORT[0] and hidden == 0
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
