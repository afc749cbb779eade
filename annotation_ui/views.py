"""What the queue tabs draw, apart from Gradio's own components: images at full resolution with a zoom shared by
the images of one view, labelled boxes that can be hidden, the recheck queue's help text, and the page script for
keys and zoom. What a benchmark's queue shows is its own (``tasks/<name>/review_view.py``).

Images are sent as the stored bytes (no resampling), so an inpainting smear looks as it is; enlarging is the
browser's, pixelated, so a zoomed pixel stays one visible pixel instead of a blur.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

ZOOMS = (1, 2, 3, 4)
FIT_PX = 640  # the default zoom shows the widest image of a view at most this wide (two side by side fit a screen)
SINGLE_FIT_PX = 1280  # ... and a view's only image, whose small objects and their labels need the room

# Keys act only when nothing that takes typing has focus: no field, no editor, no table (a selected cell takes
# letters to start an edit, so a `y` there must neither answer nor overwrite the cell). Zoom and the box toggle are
# the page's own.
HEAD = """
<style>
.bw-zoomable .bw-row { display: flex; gap: 16px; align-items: flex-start; overflow: auto; }
.bw-zoomable figure { margin: 0; flex: none; }  /* never shrunk: every image of a view at one scale */
.bw-zoomable figcaption { font-weight: 600; margin-bottom: 4px; }
.bw-frame { position: relative; cursor: zoom-in; }
.bw-frame img { width: 100%; display: block; image-rendering: pixelated; }
.bw-box { position: absolute; border: 2px solid #ff2a2a; box-sizing: border-box; pointer-events: none; }
.bw-box span { position: absolute; left: -2px; top: -2px; background: #ff2a2a; color: #fff; font: 600 13px/1.3
  sans-serif; padding: 0 4px; white-space: nowrap; }
.bw-zoomable.bw-nobox .bw-box { display: none; }
.bw-controls { margin-bottom: 6px; }
</style>
<script>
document.addEventListener("keydown", (event) => {
  const action = {y: "accept", n: "reject", s: "skip", u: "undo"}[event.key.toLowerCase()];
  if (!action || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  const near = (selector) => target.closest && target.closest(selector);
  if (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable || near(".cm-editor")) {
    return;  // typing
  }
  if (near("table, [role=grid], [role=gridcell]")) {
    // a selected table cell: the letter would start an edit that replaces the cell, so it does nothing at all
    event.preventDefault();
    event.stopPropagation();
    return;
  }
  const buttons = [...document.querySelectorAll(`[id$="-${action}"]`)].filter((b) => b.offsetParent !== null);
  if (buttons.length) { event.preventDefault(); buttons[0].click(); }
}, true);  // capture: before the table's own handler
document.addEventListener("click", (event) => {
  const frame = event.target.closest && event.target.closest(".bw-frame");
  if (!frame) return;
  const group = frame.closest(".bw-zoomable");
  const zooms = [1, 2, 3, 4];
  const zoom = zooms[(zooms.indexOf(Number(group.dataset.zoom)) + 1) % zooms.length];
  group.dataset.zoom = zoom;
  group.querySelectorAll(".bw-frame").forEach((f) => { f.style.width = `${Number(f.dataset.w) * zoom}px`; });
  group.querySelector(".bw-zoom-label").textContent = `${zoom}x`;
});
document.addEventListener("change", (event) => {
  if (!event.target.classList.contains("bw-toggle")) return;
  event.target.closest(".bw-zoomable").classList.toggle("bw-nobox", !event.target.checked);
});
</script>
"""

RECHECK_HELP = """
**Accept (y)**: the record is right as it is. **Reject (n)**: it is wrong; say why in the comment; a rejected
record leaves the next release. **Skip (s)**, **Undo (u)** as in the other queues.
"""


def escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


def size_and_type(data: bytes) -> tuple[int, int, str]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.width, image.height, Image.MIME.get(image.format or "", "image/png")


def default_zoom(images: list[bytes], fit_px: int = FIT_PX) -> int:
    """The largest zoom at which the widest image still fits ``fit_px`` (at least 1)."""
    widest = max((size_and_type(data)[0] for data in images), default=fit_px)
    return max(1, min(ZOOMS[-1], fit_px // max(1, widest)))


def frame(data: bytes, caption: str, zoom: int, boxes: dict[str, Any] | None = None, *,
          source: str | None = None) -> str:
    """One image at ``zoom`` times its stored size, with a labelled box per entry of ``boxes`` (label: [x0, y0,
    x1, y1] in image pixels); box positions are relative, so they follow the zoom. The image is fetched from
    ``source`` (the app's cached image route), else sent inline as a data URL."""
    width, height, media_type = size_and_type(data)
    marks = []
    for label, box in (boxes or {}).items():
        if not box:
            continue
        x0, y0, x1, y1 = (float(v) for v in box)
        marks.append(f'<div class="bw-box" style="left:{x0 / width:.3%};top:{y0 / height:.3%};'
                     f'width:{(x1 - x0) / width:.3%};height:{(y1 - y0) / height:.3%}"><span>{escaped(label)}</span>'
                     f'</div>')
    source = source or f"data:{media_type};base64,{base64.b64encode(data).decode()}"
    return (f'<figure><figcaption>{escaped(caption)} <small>({width}x{height} px)</small></figcaption>'
            f'<div class="bw-frame" data-w="{width}" style="width:{width * zoom}px">'
            f'<img src="{source}" alt="{escaped(caption)}">{"".join(marks)}</div></figure>')


def zoomable(frames: list[str], zoom: int, *, box_toggle: bool = False) -> str:
    """Images side by side at one scale; a click on any of them steps the zoom of all (1x to 4x and back)."""
    toggle = (' · <label><input type="checkbox" class="bw-toggle" checked> show boxes</label>' if box_toggle
              else "")
    return (f'<div class="bw-zoomable" data-zoom="{zoom}"><div class="bw-controls">zoom <b class="bw-zoom-label">'
            f'{zoom}x</b>: click an image to enlarge (all images together, 1x to 4x){toggle}</div>'
            f'<div class="bw-row">{"".join(frames)}</div></div>')
