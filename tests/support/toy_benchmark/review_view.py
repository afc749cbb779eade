"""How the annotation app shows a toy image: the picture and the question, Yes/No."""

from __future__ import annotations

import html

from tasks.benchmark import ImageLoader, Picture, ReviewItemView, ReviewView


def render(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
    shown = [image(sha) for sha in view["images"].values()]
    return (f"<p>{html.escape(view['question'])}</p>",
            [Picture("dots", data) for data in shown if data is not None])


VIEW = ReviewView(title="Dots", instructions="**Yes**: the count is right. **No**: it is not.",
                  buttons=(("accept", "Yes"), ("reject", "No")), render=render)
