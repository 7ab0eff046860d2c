"""Writes the README's pictures (docs/images/) from the e2e screenshot set of the demo profiles.

Shoot the set first (real pages of demo_logs/ in chromium, tests/e2e/test_screenshot_set.py):

    TBPROF_SCREENSHOT_SET=1 TBPROF_SCREENSHOT_RUNS=torch_ddp pytest tests/e2e/test_screenshot_set.py -k 1600
    python scripts/readme_images.py      # Pillow: installed with TensorBoard

Each picture is the top of a 1600 px light-scheme page, scaled to 1200 px and stored with a
128-colour palette: the pages are flat UI colours, so the palette keeps them sharp at about a
fifth of the size of the full-colour screenshot, small enough to live in git.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parent.parent
SHOTS = REPO / "test-artifacts" / "screenshots" / "set"
IMAGES = REPO / "docs" / "images"
WIDTH_PX = 1200
COLOURS = 128
# (screenshot of the set, picture written, height of the page kept in screenshot pixels):
# the overview down to its step-time chart, the trace viewer's whole first screen.
PICTURES = (
    ("torch_ddp__overview_page__1600_light.png", "overview_torch_ddp.png", 1075),
    ("torch_ddp__trace_viewer__1600_light.png", "trace_viewer_torch_ddp.png", 930),
)


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    for shot, picture, keep_px in PICTURES:
        im = Image.open(SHOTS / shot).convert("RGB")
        im = im.crop((0, 0, im.width, min(keep_px, im.height)))
        im = im.resize((WIDTH_PX, round(im.height * WIDTH_PX / im.width)), Image.Resampling.LANCZOS)
        im = im.quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        im.save(IMAGES / picture, optimize=True)
        print(IMAGES / picture, im.size)


if __name__ == "__main__":
    main()
