"""The evaluation report a person opens: the headline figures first, the benchmark's tables and charts next,
problems and the run's settings last; HTML rendered from the Markdown by markdown-it-py, self-contained, with
nothing from the data run as HTML."""

from __future__ import annotations

import base64
import io

from PIL import Image

from tasks.evaluate.report import write_report


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_the_report_leads_with_the_headline_and_ends_with_the_settings(tmp_path):
    (tmp_path / "scores.png").write_bytes(png())
    md, page, markdown = write_report(
        tmp_path, title="model on release@1", headline=[("NSE", "10.3"), ("PRC", "95.0")],
        summary=[("run key", "abc"), ("strategy", "direct")], tables="### Table 1\n\n| a | b |\n|---|---:|\n| x | 1 |",
        plots=[tmp_path / "scores.png"], problems=["row 3: <script>alert(1)</script> not a score"])
    order = [markdown.index(part) for part in ("| NSE | PRC |", "### Table 1", "![scores]", "## Problems",
                                               "## Settings", "| run key | abc |")]
    assert order == sorted(order) and md.read_text() == markdown
    html = page.read_text()
    assert "<table>" in html and "<th>NSE</th>" in html and '<td style="text-align:right">95.0</td>' in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, never run
    assert f'src="data:image/png;base64,{base64.b64encode(png()).decode()}"' in html  # one file, plot inlined
