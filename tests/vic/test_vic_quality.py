"""The jigsaw pool's quality ranking (tasks/vic/quality.py): the offline score's top N, the chat role's ratings
against a local OpenAI-compatible server (an unreadable rating falls back to the offline score for that image), and
the build recording which scorer ranked."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from schemas.config import BlobSettings, CatalogSettings, ModelRole, Settings
from tasks.vic.images import PoolImage, quality_score, rank_images
from tasks.vic.quality import (
    RATING_WEIGHTS,
    ChatQualityScorer,
    OfflineQualityScorer,
    UnreadableRating,
    combine,
    parse_ratings,
    pool_scorer,
    rating_prompt,
)
from tests.support.chat_server import ScriptedChatServer


def noise(seed: int, size: tuple[int, int] = (240, 260)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (size[0] // 12 + 1, size[1] // 12 + 1, 3), dtype=np.uint8)
    return np.asarray(Image.fromarray(coarse).resize((size[1], size[0]), Image.Resampling.NEAREST))


def pool() -> list[PoolImage]:
    """Four images whose offline scores are far apart: a sharp colourful one, the same in grey (no colour), a flat
    mid-grey (no sharpness, no colour, well exposed) and a flat near-black (nothing at all)."""
    sharp = noise(1)
    grey = np.repeat(sharp.mean(axis=2, keepdims=True).astype(np.uint8), 3, axis=2)
    return [PoolImage("dark.png", np.full((240, 260, 3), 4, np.uint8)), PoolImage("grey.png", grey),
            PoolImage("flat.png", np.full((240, 260, 3), 128, np.uint8)), PoolImage("sharp.png", sharp)]


def rating(consistency: int, reasonableness: int, realism: int) -> str:
    return (f"<consistency>{consistency}</consistency>\n<reasonableness>{reasonableness}</reasonableness>\n"
            f"<realism>{realism}</realism>")


def chat_settings(server: ScriptedChatServer, tmp_path: Path | None = None) -> Settings:
    stores: dict[str, Any] = {} if tmp_path is None else {
        "catalog": CatalogSettings(path=tmp_path / "catalog.duckdb"),
        "blobs": BlobSettings(uri=f"file://{tmp_path}/blobs")}
    return Settings(models={"chat": ModelRole(backend="openai", model="rater-vl",
                                              params={"base_url": server.url, "backoff_s": 0.01})}, **stores)


def answer_by_image(answers: dict[str, str]) -> Any:
    """A server behaviour answering each request by the pool image it carries (requests run concurrently, so a
    script in order would not say which image got which answer)."""
    def answer(body: dict[str, Any]) -> str:
        parts = body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        return answers[base64.b64decode(url.split(",", 1)[1]).hex()]
    return answer


def test_offline_ranking_keeps_the_expected_top_n() -> None:
    images = pool()
    scorer = OfflineQualityScorer()
    assert [i.name for i in rank_images(images, 2, scorer=scorer)] == ["sharp.png", "grey.png"]
    assert [i.name for i in rank_images(images, 3, scorer=scorer)] == ["sharp.png", "grey.png", "flat.png"]
    assert rank_images(images, 3, scorer=scorer) == rank_images(images, 3)  # the same as the built-in score
    assert scorer(images[3].png()) == pytest.approx(quality_score(images[3].pixels))  # the bytes-only form
    assert scorer.report() == {"ranked by": "offline score"}


def test_the_prompt_and_its_parser() -> None:
    assert "coherence" in rating_prompt() and "<realism>N</realism>" in rating_prompt()
    assert 'description: "a red fox in snow"' in rating_prompt("a red fox in snow")
    assert parse_ratings(rating(7, 8, 9)) == {"consistency": 7, "reasonableness": 8, "realism": 9}
    prose = "<think>realism: 2</think>Coherence: 6/10\n**Reasonableness**: 5\nRealism - 4"
    assert parse_ratings(prose) == {"consistency": 6, "reasonableness": 5, "realism": 4}
    with pytest.raises(UnreadableRating, match=r"no realism rating.*'<consistency>"):
        parse_ratings("<consistency>7</consistency><reasonableness>8</reasonableness>")
    with pytest.raises(UnreadableRating, match="outside 1-10"):
        parse_ratings(rating(7, 8, 11))
    assert sum(RATING_WEIGHTS.values()) == pytest.approx(1.0) and len(set(RATING_WEIGHTS.values())) == 1
    assert combine({"consistency": 1, "reasonableness": 1, "realism": 1}) == 0.0
    assert combine({"consistency": 10, "reasonableness": 4, "realism": 7}) == pytest.approx(2 / 3)  # mean 7
    assert combine({"consistency": 10, "reasonableness": 1, "realism": 1}, {"consistency": 1.0}) == 1.0
    with pytest.raises(ValueError):
        combine({"consistency": 5, "reasonableness": 5, "realism": 5}, {"sharpness": 1.0})


def test_chat_ranking_follows_the_ratings_and_an_unreadable_one_falls_back_offline() -> None:
    images = pool()
    # the ratings turn the offline order around, and sharp.png's answer cannot be read
    answers = {images[0].png().hex(): rating(10, 10, 10), images[1].png().hex(): rating(2, 3, 2),
               images[2].png().hex(): rating(6, 7, 5), images[3].png().hex(): "What a lovely picture!"}
    with ScriptedChatServer() as server:
        server.script(("call", answer_by_image(answers)))
        scorer = pool_scorer(chat_settings(server))
        assert isinstance(scorer, ChatQualityScorer)
        scores = scorer.score_pool(images)
        assert scores[:3] == pytest.approx([1.0, (7 / 3 - 1) / 9, 5 / 9])
        assert scores[3] == pytest.approx(quality_score(images[3].pixels))  # the offline score, for this one only
        assert [i.name for i in rank_images(images, 2, scorer=scorer)] == ["dark.png", "sharp.png"]
        report = scorer.report()
        assert report["ranked by"] == "chat openai rater-vl" and report["rated"] == 3
        assert report["scored offline"] == 1 and len(report["errors"]) == 1
        assert report["errors"][0].startswith("sharp.png: the chat model's rating is unreadable (no consistency")
        assert len(server.requests) == 8  # two rankings of four images, every one asked (no cache configured)
        sent = {}
        for request in server.requests:
            parts = request["body"]["messages"][0]["content"]
            assert parts[0]["type"] == "image_url" and parts[1]["text"] == rating_prompt()
            sent[base64.b64decode(parts[0]["image_url"]["url"].split(",", 1)[1])] = True
        assert set(sent) == {image.png() for image in images}  # every request carries its image


def test_the_build_ranks_by_the_chat_role_and_records_it(tmp_path: Path) -> None:
    from storage import open_storage
    from tasks.benchmark import BuildContext
    from tasks.vic.options import VicBuildOptions
    from tasks.vic.stages import generate_stage, generator_options

    folder = tmp_path / "pool"
    folder.mkdir()
    for seed, name in enumerate(["a", "b", "c"]):
        Image.fromarray(noise(seed + 10)).save(folder / f"{name}.png")
    answers = {f"{name}.png": score for name, score in zip("abc", (3, 8, 6), strict=True)}
    pngs = {PoolImage(f, np.asarray(Image.open(folder / f).convert("RGB"))).png().hex(): rating(s, s, s)
            for f, s in answers.items()}
    options = VicBuildOptions(tasks=("jigsaw",), count=2, images_dir=str(folder), quality_top_n=2)
    with ScriptedChatServer() as server:
        server.script(("call", answer_by_image(pngs)))
        settings = chat_settings(server, tmp_path)
        counts = generate_stage(settings, BuildContext(benchmark="vic", run_id=None, options=options))
        assert counts["jigsaw"]["instances"] == 2 and len(server.requests) == 3
        assert counts["jigsaw"]["quality ranking"] == {"ranked by": "chat openai rater-vl", "rated": 3,
                                                       "scored offline": 0, "errors": []}
        records = open_storage(settings).catalog.find_records(kind="vic_instance")
        assert sorted(r.payload["meta"]["source"] for r in records) == ["b.png", "c.png"]
        params = records[0].producer.params
        assert params["quality_top_n"] == 2 and params["quality_scorer"]["method"] == "chat"
        assert params["quality_scorer"]["model"] == "rater-vl" and "base_url" not in str(params)
        generate_stage(settings, BuildContext(benchmark="vic", run_id=None, options=options))
        assert len(server.requests) == 3  # the rerun found every rating in the catalog's cache
    offline = generator_options("jigsaw", options, Settings())
    assert offline["quality_scorer"].model_dump()["method"] == "offline"
    assert generator_options("jigsaw", VicBuildOptions(), Settings()) == {"pool": "composed"}  # no scorer, no folder
