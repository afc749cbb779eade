"""What the queue tabs draw, apart from Gradio's own components: images at full resolution, wrapping onto rows at
a zoom shared by the images of one view and chosen to fit a 1440 x 900 window, labelled boxes that can be hidden,
the line naming each item, the recheck queue's help text, the styles of the review-screen kit
(``tasks.review_screen``) and the page script (keys, Esc, zoom, the tab remembered, loading again after a restart).
What a benchmark's queue shows is its own (``tasks/<name>/review_view.py``).

Images are sent as the stored bytes (no resampling), so an inpainting smear looks as it is; enlarging is the
browser's, pixelated, so a zoomed pixel stays one visible pixel instead of a blur.
"""

from __future__ import annotations

import base64
import html
import io
import json
from typing import Any

ZOOMS = (1, 2, 3, 4)
# The room an item's images have in a 1440 x 900 window: the tab's width less the page's margins, no image taller
# than the window less the page's header and buttons, and all of them, wrapped into rows, about one more window.
WIDTH_PX = 1300
IMAGE_HEIGHT_PX = 620
IMAGES_HEIGHT_PX = 1200
GAP_PX, CAPTION_PX = 16, 28

# Sent in the page's head by the front door (``guard``), to run before Gradio's modules take their references.
# Gradio 6.31's status tracker animates what it shows with frame loops that outlive it: its progress timer checks
# only a flag of its own, so a tracker removed while pending (the page's loading screen leaves one behind) asks for
# 60 frames a second for as long as the page is open, and its spinner's springs go on for seconds after an event,
# hidden or not (~4% of a core per open page, idle or not, more while working). A frame asked for from the status
# tracker's code waits while no progress display is on screen, and is given once one is (so a spinner shown later
# turns, and the loops left behind stop costing anything).
FRAME_GUARD = b"""<script>
(() => {
  const frame = window.requestAnimationFrame.bind(window);
  const shown = '[class~="wrap"][class~="full"]:not(.hide), [class~="wrap"][class~="minimal"]:not(.hide)';
  let waiting = [];
  const release = () => {
    if (!waiting.length || !document.querySelector(shown)) return;
    const due = waiting;
    waiting = [];
    due.forEach((callback) => frame(callback));
  };
  window.requestAnimationFrame = (callback) => {
    if (document.querySelector(shown) || !/\\/statustracker-[\\w-]+\\.js/.test(new Error().stack || "")) {
      return frame(callback);
    }
    waiting.push(callback);
    return 0;
  };
  new MutationObserver(release).observe(document, {subtree: true, attributes: true, attributeFilter: ["class"]});
})();
</script>"""

# Keys act only when nothing that takes typing has focus: no field, no editor, no table (a selected cell takes
# letters to start an edit, so a `y` there must neither answer nor overwrite the cell); Esc lets go of the table.
# Zoom and the box toggle are the page's own. The page remembers its tab (sessionStorage, per browser tab) and,
# when the app it came from is gone and back (a restart: another boot id, or the session is no longer known), loads
# again: to the same tab, through the login page when the session did not survive.
HEAD = """
<style>
.bw-zoomable .bw-row { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; overflow-x: auto; }
.bw-zoomable figure { margin: 0; flex: none; }  /* never shrunk: every image of a view at one scale */
.bw-zoomable figcaption { font-weight: 600; margin-bottom: 4px; }
.bw-frame { position: relative; cursor: zoom-in; }
.bw-frame img { width: 100%; display: block; image-rendering: pixelated; }
.bw-box { position: absolute; border: 2px solid #ff2a2a; box-sizing: border-box; pointer-events: none; }
.bw-box span { position: absolute; left: -2px; top: -2px; background: #ff2a2a; color: #fff; font: 600 13px/1.3
  sans-serif; padding: 0 4px; white-space: nowrap; }
.bw-zoomable.bw-nobox .bw-box { display: none; }
.bw-controls { margin-bottom: 6px; }
.bw-id { font-size: 13px; opacity: .85; margin: 0 0 4px; }
.bw-screen p { margin: 2px 0; }
.bw-question h4 { margin: 8px 0 2px; }
.bw-prompt { white-space: pre-wrap; word-break: break-word; margin: 2px 0; padding: 6px 8px; font-size: 13px;
  background: var(--background-fill-secondary); border-radius: 4px; max-width: 100%; }
.bw-options { margin: 2px 0 2px 1.2em; padding: 0; }
.bw-marked { font-weight: 600; }
.bw-mark { background: #1a7f37; color: #fff; border-radius: 3px; padding: 0 5px; font-size: 12px; }
.bw-ask { margin-top: 6px !important; }
.bw-table { border-collapse: collapse; font-size: 13px; width: 100%; }
.bw-table td, .bw-table th { border: 1px solid var(--border-color-primary); padding: 2px 6px; text-align: left;
  overflow-wrap: anywhere; }  /* a narrow column wraps its words rather than hide the last columns */
.bw-changed { background: rgba(255, 196, 0, .35); }
.bw-answers { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.bw-answers > div { flex: 1 1 420px; min-width: 0; overflow-x: auto; }
</style>
<script>
(() => {
  const near = (target, selector) => target.closest && target.closest(selector);
  const letGo = () => {  // the table lets go of its cell: a click outside it is what deselects a cell
    if (document.activeElement) document.activeElement.blur();
    document.body.dispatchEvent(new MouseEvent("mousedown", {bubbles: true}));
    document.body.dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
    document.body.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  };
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const inTable = near(target, "table, [role=grid], [role=gridcell], .table-wrap");
    // a cell can stay selected after the focus left the table (an edit ended with Enter): Esc lets go of it too
    if (event.key === "Escape" && (inTable || document.querySelector(".cell-selected"))) {
      setTimeout(letGo, 0);  // after the table's own Esc (which ends an edit in progress)
      return;
    }
    const action = {y: "accept", n: "reject", s: "skip", u: "undo"}[event.key.toLowerCase()];
    if (!action || event.ctrlKey || event.metaKey || event.altKey) return;
    if (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable
        || near(target, ".cm-editor")) {
      return;  // typing
    }
    if (inTable) {
      // a selected table cell: the letter would start an edit that replaces the cell, so it does nothing at all
      event.preventDefault();
      event.stopPropagation();
      return;
    }
    const buttons = [...document.querySelectorAll(`[id$="-${action}"]`)].filter((b) => b.offsetParent !== null);
    if (buttons.length) { event.preventDefault(); buttons[0].click(); }
  }, true);  // capture: before the table's own handler
  document.addEventListener("click", (event) => {
    const tab = near(event.target, "[role=tab]");
    if (tab) sessionStorage.setItem("bw-tab", tab.textContent.trim());
    const frame = near(event.target, ".bw-frame");
    if (!frame) return;
    const group = frame.closest(".bw-zoomable");
    const zooms = JSON.parse(group.dataset.zooms);
    const zoom = zooms[(zooms.indexOf(Number(group.dataset.zoom)) + 1) % zooms.length];
    group.dataset.zoom = zoom;
    group.querySelectorAll(".bw-frame").forEach((f) => { f.style.width = `${Math.round(f.dataset.w * zoom)}px`; });
    group.querySelector(".bw-zoom-label").textContent = `${zoom}x`;
  }, true);
  document.addEventListener("change", (event) => {
    if (!event.target.classList.contains("bw-toggle")) return;
    event.target.closest(".bw-zoomable").classList.toggle("bw-nobox", !event.target.checked);
  });
  const app = () => document.querySelector('[id$="-progress"]');  // none on the login page
  const wanted = sessionStorage.getItem("bw-tab");
  let tries = 0;
  const restore = setInterval(() => {
    const tab = [...document.querySelectorAll("[role=tab]")].find((t) => t.textContent.trim() === wanted);
    if (tab && tab.getAttribute("aria-selected") !== "true") tab.click();
    if (!wanted || tab || ++tries > 60) clearInterval(restore);
  }, 500);
  let boot = null, lost = false;
  setInterval(async () => {
    if (!app()) return;
    let response;
    try {
      response = await fetch("api/v1/alive", {cache: "no-store", credentials: "same-origin"});
    } catch (error) {
      lost = true;  // the app is gone, for now
      return;
    }
    if (response.status === 401) { location.reload(); return; }  // back, but without this session: log in again
    if (!response.ok) { lost = true; return; }
    const said = await response.json();
    boot = boot || said.boot;
    if (lost || said.boot !== boot) location.reload();
  }, 2000);
})();
</script>
"""

RECHECK_HELP = """
Each record is shown as its benchmark's own queue shows it (a kind no view draws: as stored).
**Accept (y)**: the record is right as it is. **Reject (n)**: it is wrong; say why in the comment; a rejected
record leaves the next release. **Skip (s)**, **Undo (u)** as in the other queues.
"""


def escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


def size_and_type(data: bytes) -> tuple[int, int, str]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.width, image.height, Image.MIME.get(image.format or "", "image/png")


def default_zoom(sizes: list[tuple[int, int]]) -> float:
    """The largest zoom (1x to 4x) at which every image fits the width and the image height, and all of them
    wrapped into rows fit the images' height; an image larger than the room at 1x gets the fraction that fits it."""
    if not sizes:
        return 1
    widest, tallest = max(w for w, _ in sizes), max(h for _, h in sizes)
    shrink = min(1.0, WIDTH_PX / max(1, widest), IMAGE_HEIGHT_PX / max(1, tallest))
    if shrink < 1:
        return max(0.05, int(shrink * 20) / 20)  # a step of 1/20 below what fits
    return max([z for z in ZOOMS if widest * z <= WIDTH_PX and tallest * z <= IMAGE_HEIGHT_PX
                and laid_out_height(sizes, z) <= IMAGES_HEIGHT_PX] or [1])


def laid_out_height(sizes: list[tuple[int, int]], zoom: float) -> float:
    """How tall the images are at ``zoom`` when they wrap into rows of ``WIDTH_PX``, each with its caption."""
    total, row_width, row_height = 0.0, 0.0, 0.0
    for width, height in sizes:
        if row_width and row_width + GAP_PX + width * zoom > WIDTH_PX:
            total += row_height + GAP_PX
            row_width, row_height = 0.0, 0.0
        row_width += (GAP_PX if row_width else 0) + width * zoom
        row_height = max(row_height, height * zoom + CAPTION_PX)
    return total + row_height


def frame(data: bytes, caption: str, zoom: float, boxes: dict[str, Any] | None = None, *,
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
            f'<div class="bw-frame" data-w="{width}" style="width:{round(width * zoom)}px">'
            f'<img src="{source}" alt="{escaped(caption)}">{"".join(marks)}</div></figure>')


def zoomable(frames: list[str], zoom: float, *, box_toggle: bool = False) -> str:
    """Images at one scale, wrapping onto further rows; a click on any of them steps the zoom of all (the default,
    1x to 4x, and back)."""
    zooms = sorted({zoom, *ZOOMS})
    toggle = (' · <label><input type="checkbox" class="bw-toggle" checked> show boxes</label>' if box_toggle
              else "")
    return (f'<div class="bw-zoomable" data-zoom="{zoom:g}" data-zooms="{escaped(json.dumps(zooms))}">'
            f'<div class="bw-controls">zoom <b class="bw-zoom-label">{zoom:g}x</b>: click an image to enlarge (all '
            f'images together, {" / ".join(f"{z:g}x" for z in zooms)}){toggle}</div>'
            f'<div class="bw-row">{"".join(frames)}</div></div>')


def item_line(item_id: str, target_id: str, target_kind: str) -> str:
    """The line every item's screen starts with: which item it is, and which record it is about."""
    return (f'<p class="bw-id">item <code>{escaped(item_id)}</code> · about the {escaped(target_kind)} '
            f'<code>{escaped(target_id[:12])}</code></p>')
