"""Chat with a local Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint through transformers.

``model`` is a checkpoint folder (or a hub id already in the local cache; nothing is downloaded when
``HF_HUB_OFFLINE=1``). The processor is ``AutoProcessor`` when it can be built; without torchvision (whose only
build for torch 2.13 breaks transformers) the Qwen processors cannot be, so the tokenizer and the PIL image processor
are used directly and each ``<|image_pad|>`` is expanded to the number of merged patches the image yields, which
is what the processor would have done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tasks.models.base import ChatBackend, Generation, Message, decode_image

IMAGE_PAD = "<|image_pad|>"


def resolve_device(requested: str | None) -> str:
    import torch

    if requested in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def resolve_dtype(requested: str | None, device: str) -> Any:
    import torch

    if requested in (None, "", "auto"):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return getattr(torch, requested)
    except AttributeError:
        raise ValueError(f"unknown torch dtype {requested!r}") from None


@dataclass
class TransformersChat(ChatBackend):
    """params: ``device`` (auto), ``dtype`` (auto: bfloat16 on GPU, float32 on CPU), ``batch_size`` (4),
    ``model_class`` (default AutoModelForImageTextToText), ``min_pixels`` / ``max_pixels`` for the image processor."""

    name: ClassVar[str] = "transformers"

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the transformers chat backend needs `model`: a checkpoint folder")
        self._loaded: tuple[Any, Any, Any, Any] | None = None

    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is not None:
            return self._loaded
        import transformers

        device = resolve_device(self.params.get("device"))
        dtype = resolve_dtype(self.params.get("dtype"), device)
        model_class = getattr(transformers, self.params.get("model_class", "AutoModelForImageTextToText"))
        model = model_class.from_pretrained(self.model, dtype=dtype).to(device).eval()
        pixel_limits = {k: self.params[k] for k in ("min_pixels", "max_pixels") if k in self.params}
        try:
            processor = transformers.AutoProcessor.from_pretrained(self.model, **pixel_limits)
            tokenizer, image_processor = processor.tokenizer, None
        except ImportError:  # the Qwen processors import torchvision for their video part
            processor = None
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.model)
            image_processor = transformers.AutoImageProcessor.from_pretrained(self.model, **pixel_limits)
        tokenizer.padding_side = "left"
        self._loaded = (model, processor, tokenizer, image_processor)
        return self._loaded

    def generate_many(self, conversations: list[list[Message]], generation: Generation) -> list[str]:
        answers: list[str] = []
        self.generate_each(conversations, generation, lambda index, answer: answers.append(str(answer)))
        return answers

    def generate_each(self, conversations: list[list[Message]], generation: Generation,
                      deliver: Callable[[int, str | Exception], None]) -> None:
        """Batch by batch, each batch's answers delivered (and so cached) before the next starts."""
        batch_size = int(self.params.get("batch_size", 4))
        for start in range(0, len(conversations), batch_size):
            for offset, answer in enumerate(self._generate_batch(conversations[start:start + batch_size],
                                                                 generation)):
                deliver(start + offset, answer)

    def _generate_batch(self, conversations: list[list[Message]], generation: Generation) -> list[str]:
        import torch

        model, processor, tokenizer, image_processor = self._load()
        templated = [[{"role": m.role, "content": [{"type": "image"} if isinstance(p, bytes) else
                                                   {"type": "text", "text": p} for p in m.parts]}
                      for m in conversation] for conversation in conversations]
        texts = [tokenizer.apply_chat_template(t, tokenize=False, add_generation_prompt=True) for t in templated]
        images = [decode_image(p) for conversation in conversations for m in conversation for p in m.parts
                  if isinstance(p, bytes)]
        if processor is not None:
            inputs = processor(text=texts, images=images or None, return_tensors="pt", padding=True)
        else:
            vision: dict[str, Any] = image_processor(images=images, return_tensors="pt") if images else {}
            if images:
                texts = _expand_image_pads(texts, vision["image_grid_thw"], image_processor.merge_size)
            inputs = {**tokenizer(texts, return_tensors="pt", padding=True), **vision}
        inputs = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in dict(inputs).items()}
        sampling: dict[str, Any] = {"do_sample": generation.temperature > 0}
        if generation.temperature > 0:
            sampling.update(temperature=generation.temperature, top_p=generation.top_p)
            if generation.top_k is not None:
                sampling["top_k"] = generation.top_k
            if generation.seed is not None:
                torch.manual_seed(generation.seed)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=generation.max_tokens, **sampling,
                                    pad_token_id=tokenizer.pad_token_id)
        new_tokens = output[:, inputs["input_ids"].shape[1]:]
        answers = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return [_cut_at_stop(a, generation.stop) for a in answers]


def _expand_image_pads(texts: list[str], grids: Any, merge_size: int) -> list[str]:
    counts = [int(grid.prod()) // merge_size ** 2 for grid in grids]
    expanded, used = [], 0
    for text in texts:
        pieces = text.split(IMAGE_PAD)
        out = pieces[0]
        for piece in pieces[1:]:
            out += IMAGE_PAD * counts[used] + piece
            used += 1
        expanded.append(out)
    if used != len(counts):
        raise ValueError(f"{used} image placeholders in the prompts but {len(counts)} images")
    return expanded


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    for marker in stop:
        if marker in text:
            text = text[:text.index(marker)]
    return text
