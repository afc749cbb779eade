"""The review-screen kit every benchmark's review view draws with, so each says only what differs.

A view's ``screen(view, image)`` gives a ``Screen``: a few facts, the questions as the model reads them (built by
the benchmark's own evaluation code, ``asked``), every option with the marked answer, and the images. ``render``
turns it into what ``tasks.benchmark.ReviewView.render`` returns: the HTML (everything from data escaped) and the
pictures, which the annotation app lays out to fit the screen with one zoom for all of them. The app adds what every
screen has (the item's id, the verdict buttons, the help text).

The evaluation code is asked with ``Blob`` stand-ins for the images (their sha256), so building the question reads
no image; ``asked`` then names each image by the label the model reads just before it ("Option A:", "Picture 1:").
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tasks.benchmark import ImageLoader, Picture, ReviewItemView


class Blob(str):
    """A blob's sha256 standing in for its bytes where a benchmark's prompt code expects an image."""


def blob_loader(sha: str) -> Blob:
    return Blob(sha)


@dataclass(frozen=True)
class Asking:
    """The evaluation settings a benchmark's ``messages`` reads (``strategy``, ``option``), for one prompt."""

    strategy: str
    options: dict[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


def asked(messages: Iterable[Any], names: dict[str, tuple[str, ...]] | None = None
          ) -> tuple[str, list[tuple[str, str]]]:
    """(the text of the model's turns as it reads it, each image marked where it comes; [(caption, sha256)] of the
    images it sees, in order). An image takes the short text just before it ("Option A:") as its caption, else
    its name in ``names`` (sha256 -> name), else none ("")."""
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for message in messages:
        if getattr(message, "role", "user") != "user":
            continue
        label = ""
        for part in message.parts:
            if isinstance(part, Blob):
                caption = label.strip().rstrip(":").strip()
                images.append((caption, str(part)))
                if caption:
                    texts[-1] = f"{texts[-1].rstrip()} [image]"
                else:
                    texts.append(f"[image: {' = '.join((names or {}).get(part, ('image',)))}]")
                label = ""
            elif isinstance(part, str):
                label = part if len(part.strip()) <= 60 and "\n" not in part.strip() else ""
                texts.append(part.strip("\n"))
    return "\n".join(t for t in texts if t), images


def role_names(images: dict[str, str], captions: dict[str, str] | None = None) -> dict[str, tuple[str, ...]]:
    """sha256 -> the names of its roles (``captions`` or the role itself), for an item's images by role."""
    named: dict[str, list[str]] = {}
    for role, sha in images.items():
        if sha:
            named.setdefault(sha, []).append((captions or {}).get(role, role.replace("_", " ")))
    return {sha: tuple(names) for sha, names in named.items()}


@dataclass(frozen=True)
class Question:
    """One question of an item: its heading, the text as the model reads it, the options (label, text) and the
    marked answer (an option's label, or the answer itself)."""

    heading: str
    text: str
    options: tuple[tuple[str, str], ...] = ()
    answer: str = ""
    answer_label: str = "Marked answer"


@dataclass(frozen=True)
class Screen:
    """What a review item shows: facts (label, value) above the questions, the questions, the images in order."""

    facts: tuple[tuple[str, str], ...] = ()
    questions: tuple[Question, ...] = ()
    pictures: tuple[Picture, ...] = ()


def escaped(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _question_html(question: Question) -> str:
    items = "".join(
        f'<li class="bw-option{" bw-marked" if label == question.answer else ""}"><b>{escaped(label)}</b>'
        f'{": " + escaped(text) if text else ""}'
        f'{" <span class=bw-mark>marked answer</span>" if label == question.answer else ""}</li>'
        for label, text in question.options)
    heading = f"<h4>{escaped(question.heading)}</h4>" if question.heading else ""
    prompt = f'<pre class="bw-prompt">{escaped(question.text)}</pre>' if question.text else ""
    answer = (f'<p class="bw-answer"><b>{escaped(question.answer_label)}:</b> {escaped(question.answer)}</p>'
              if question.answer else "")
    return (f'<div class="bw-question">{heading}{prompt}'
            f'{f"<ul class=bw-options>{items}</ul>" if items else ""}{answer}</div>')


def screen_html(view: ReviewItemView, screen: Screen) -> str:
    """The item's facts, its questions and the reviewer's own question, escaped."""
    facts = "".join(f"<p><b>{escaped(label)}:</b> {escaped(value)}</p>" for label, value in screen.facts)
    questions = "".join(_question_html(q) for q in screen.questions)
    return (f'<div class="bw-screen">{facts}{questions}'
            f'<p class="bw-ask"><b>Your question:</b> {escaped(view.get("question", ""))}</p></div>')


def render(screen_of: Callable[[ReviewItemView, ImageLoader], Screen]
           ) -> Callable[[ReviewItemView, ImageLoader], tuple[str, list[Picture]]]:
    """A ``ReviewView.render`` drawing the screen ``screen_of`` gives."""
    def drawn(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
        screen = screen_of(view, image)
        return screen_html(view, screen), list(screen.pictures)
    return drawn


def pictures(shown: Iterable[tuple[str, str | None]], image: ImageLoader, *,
             names: dict[str, tuple[str, ...]] | None = None,
             boxes: dict[str, dict[str, Any]] | None = None) -> tuple[Picture, ...]:
    """The images (caption, sha256) in order, then the others of ``names`` (sha256 -> name, ``role_names``); each
    image once, with every caption it was given and its names; the ones ``image`` cannot load left out.
    ``boxes``: sha256 -> its labelled boxes."""
    names = names or {}
    given: dict[str, list[str]] = {}
    for caption, sha in [*shown, *(("", sha) for sha in names)]:
        if sha and caption not in given.setdefault(sha, []):
            given[sha].append(caption)
    captions: dict[str, str] = {}
    for sha, said in given.items():
        caption = " = ".join(c for c in said if c)
        others = " = ".join(n for n in names.get(sha, ()) if n.lower() not in caption.lower())
        captions[sha] = f"{caption} ({others})" if caption and others else caption or others or "image"
    found = [(caption, sha, image(sha)) for sha, caption in captions.items()]
    return tuple(Picture(caption, data, (boxes or {}).get(sha)) for caption, sha, data in found if data is not None)


def table_html(columns: Iterable[str], rows: list[list[Any]], shown: list[list[Any]] | None = None) -> str:
    """A read-only table; with ``shown`` (the rows first given), the cells that differ from the row of the same
    first cell are marked, and so are rows it does not have."""
    before = {str(row[0]): row for row in shown or [] if row}
    head = "".join(f"<th>{escaped(c)}</th>" for c in columns)
    body = []
    for row in rows:
        old = before.get(str(row[0])) if row else None
        changed = [shown is not None and (old is None or i >= len(old) or old[i] != cell) for i, cell in enumerate(row)]
        cells = "".join(f'<td{" class=bw-changed" if mark else ""}>{escaped(cell)}</td>'
                        for cell, mark in zip(row, changed, strict=True))
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="bw-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
