#!/usr/bin/env python3
"""Screenshots of a privnlu HTML report in headless Chromium (the page as a person sees it).

    python scripts/screenshot_report.py runs/demo/report/index.html --out runs/demo/screens

Writes ``top.png`` (the first screen, 1280 x 900) and ``full.png`` (the whole page, trailing white space cut).
Needs ``chromium`` (Debian: ``apt-get install chromium``) on PATH, or ``--browser``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser(explicit: str | None = None) -> str | None:
    if explicit:
        return explicit if shutil.which(explicit) or Path(explicit).exists() else None
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def shoot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
               f"--window-size={width},{height}", f"--screenshot={png}", "--virtual-time-budget=3000", page.resolve().as_uri()]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def trim(png: Path) -> None:
    """Cut the white space below the page's last content."""
    from PIL import Image, ImageChops

    img = Image.open(png).convert("RGB")
    box = ImageChops.difference(img, Image.new("RGB", img.size, "white")).getbbox()
    if box:
        img.crop((0, 0, img.width, min(img.height, box[3] + 20))).save(png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("page", type=Path, help="the report's index.html")
    ap.add_argument("--out", type=Path, default=Path("screens"), help="folder for the PNGs (default: screens)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--full-height", type=int, default=9000, help="window height for the whole page (default: 9000)")
    ap.add_argument("--browser", help="browser executable (default: chromium on PATH)")
    args = ap.parse_args(argv)
    browser = find_browser(args.browser)
    if browser is None:
        sys.stderr.write("no Chromium found: apt-get install chromium (or pass --browser)\n")
        return 2
    if not args.page.is_file():
        sys.stderr.write(f"no such page: {args.page}\n")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    shoot(browser, args.page, args.out / "top.png", args.width, 900)
    shoot(browser, args.page, args.out / "full.png", args.width, args.full_height)
    trim(args.out / "full.png")
    print(f"{args.out / 'top.png'}\n{args.out / 'full.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
