"""Detectors, taggers and image editors: real backends over transformers and diffusers, offline ones over OpenCV."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar

from tasks.models import classic_vision
from tasks.models.base import (
    ChatBackend,
    Detection,
    Detector,
    EditRequest,
    Image,
    ImageEditor,
    Message,
    Tagger,
    decode_image,
    encode_png,
)
from tasks.models.transformers_chat import resolve_device, resolve_dtype

# -- detectors ----------------------------------------------------------------------------------------------


@dataclass
class ClassicDetector(Detector):
    """Boxes of colour-and-shape blobs whose name matches a phrase (see classic_vision.phrase_match)."""

    name: ClassVar[str] = "classic"

    def detect(self, image: Image, phrases: list[str]) -> list[Detection]:
        blobs = classic_vision.segment_image(image)
        found = []
        for phrase in phrases:
            for blob in blobs:
                score = classic_vision.phrase_match(blob, phrase)
                if score > 0:
                    found.append(Detection(phrase=phrase, box=tuple(float(v) for v in blob.box), score=score))
        return found


@dataclass
class GroundingDinoDetector(Detector):
    """Grounding DINO through transformers. params: ``box_threshold`` (0.35), ``text_threshold`` (0.25), ``device``,
    ``dtype``. ``model`` is a checkpoint folder such as a saved IDEA-Research/grounding-dino-base."""

    name: ClassVar[str] = "grounding-dino"

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the grounding-dino detector needs `model`: a checkpoint folder")
        self._loaded: tuple[Any, Any] | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from transformers import AutoProcessor, GroundingDinoForObjectDetection

            device = resolve_device(self.params.get("device"))
            dtype = resolve_dtype(self.params.get("dtype", "float32"), device)
            model = GroundingDinoForObjectDetection.from_pretrained(self.model, dtype=dtype).to(device).eval()
            self._loaded = (model, AutoProcessor.from_pretrained(self.model))
        return self._loaded

    def detect(self, image: Image, phrases: list[str]) -> list[Detection]:
        import torch

        if not phrases:
            return []
        model, processor = self._load()
        picture = decode_image(image)
        # Grounding DINO reads one lower-case prompt of phrases each ended by a period.
        prompt = " ".join(p.strip().lower().rstrip(".") + "." for p in phrases)
        inputs = processor(images=picture, text=prompt, return_tensors="pt").to(model.device)
        with torch.inference_mode():
            outputs = model(**inputs)
        result = processor.post_process_grounded_object_detection(
            outputs, inputs["input_ids"], threshold=float(self.params.get("box_threshold", 0.35)),
            text_threshold=float(self.params.get("text_threshold", 0.25)),
            target_sizes=[(picture.height, picture.width)])[0]
        detections = []
        # Past the threshold filter, transformers can return more labels than boxes: the boxes lead.
        for score, box, label in zip(result["scores"], result["boxes"], result["text_labels"], strict=False):
            phrase = _closest_phrase(label, phrases)
            if phrase is not None:
                detections.append(Detection(phrase=phrase, box=tuple(float(v) for v in box.tolist()),
                                            score=float(score)))
        return detections


def _closest_phrase(label: str, phrases: list[str]) -> str | None:
    """The phrase sharing most words with a label Grounding DINO produced (it returns the matched words)."""
    label_words = set(label.lower().replace(".", " ").split())
    overlap = [(len(label_words & set(p.lower().split())), -i) for i, p in enumerate(phrases)]
    best, index = max(overlap)
    return phrases[-index] if best > 0 else None


# -- taggers ------------------------------------------------------------------------------------------------


@dataclass
class ClassicTagger(Tagger):
    """Names of the colour-and-shape blobs in the image, then their bare nouns."""

    name: ClassVar[str] = "classic"

    def tag(self, image: Image) -> list[str]:
        blobs = classic_vision.segment_image(image)
        names = [b.name for b in blobs]
        nouns = [classic_vision.SHAPE_NOUNS[b.shape] for b in blobs]
        return list(dict.fromkeys(names + nouns))


DEFAULT_VOCABULARY = [
    "table", "cup", "mug", "bowl", "plate", "bottle", "cube", "block", "ball", "box", "drawer", "cabinet", "towel",
    "sponge", "spoon", "knife", "fork", "pan", "pot", "lid", "fruit", "apple", "banana", "orange", "carrot", "bread",
    "book", "pen", "phone", "laptop", "keyboard", "chair", "door", "shelf", "basket", "robot arm", "gripper", "hand",
]


@dataclass
class ClipTagger(Tagger):
    """Zero-shot tagging with CLIP over a vocabulary. params: ``vocabulary`` (default a tabletop list),
    ``template`` ("a photo of a {}"), ``top_k`` (5), ``min_probability`` (0.05), ``device``."""

    name: ClassVar[str] = "clip"

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the clip tagger needs `model`: a CLIP checkpoint folder")
        self.vocabulary = list(self.params.get("vocabulary", DEFAULT_VOCABULARY))
        self._loaded: tuple[Any, Any, Any] | None = None

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoProcessor, CLIPModel

            device = resolve_device(self.params.get("device"))
            model = CLIPModel.from_pretrained(self.model).to(device).eval()
            processor = AutoProcessor.from_pretrained(self.model)
            template = str(self.params.get("template", "a photo of a {}"))
            text = processor(text=[template.format(v) for v in self.vocabulary], return_tensors="pt", padding=True)
            with torch.inference_mode():
                features = model.get_text_features(**text.to(device))
                features = getattr(features, "pooler_output", features)
            self._loaded = (model, processor, features / features.norm(dim=-1, keepdim=True))
        return self._loaded

    def tag(self, image: Image) -> list[str]:
        import torch

        model, processor, text_features = self._load()
        vocabulary = self.vocabulary
        pixels = processor(images=decode_image(image), return_tensors="pt").to(model.device)
        with torch.inference_mode():
            features = model.get_image_features(**pixels)
            features = getattr(features, "pooler_output", features)
            features = features / features.norm(dim=-1, keepdim=True)
            probabilities = (model.logit_scale.exp() * features @ text_features.T).softmax(dim=-1)[0]
        top_k = min(int(self.params.get("top_k", 5)), len(vocabulary))
        floor = float(self.params.get("min_probability", 0.05))
        values, indices = probabilities.topk(top_k)
        return [vocabulary[i] for v, i in zip(values.tolist(), indices.tolist(), strict=True) if v >= floor]


TAG_PROMPT_VERSION = "tag-list-v1"
TAG_PROMPT = ("List every distinct physical object you can see in this image. Use short lower-case nouns or noun "
              "phrases (for example 'red cup'), no people's names, no duplicates.")


@dataclass
class ChatTagger(Tagger):
    """A chat VLM asked to list the objects it sees; answers come back through the structured-output helper."""

    name: ClassVar[str] = "chat"
    chat: ChatBackend | None = None

    def tag(self, image: Image) -> list[str]:
        from pydantic import BaseModel, Field

        from tasks.models.structured import ask_structured

        class ObjectList(BaseModel):
            objects: list[str] = Field(description="object names, lower case")

        if self.chat is None:
            raise ValueError("the chat tagger needs a chat backend: configure [models.chat]")
        result = ask_structured(self.chat, [Message.user(image, TAG_PROMPT)], ObjectList)
        if not result.ok:
            raise ValueError(f"chat tagger: {result.failure_reason()}")
        return list(dict.fromkeys(o.strip().lower() for o in result.value.objects if o.strip()))


# -- image editors ------------------------------------------------------------------------------------------


@dataclass
class OpenCVEditor(ImageEditor):
    """Edits the target object's pixels for real: ``color`` shifts its hue (to ``new_value`` if that names a
    colour), ``remove`` inpaints it away, ``replace`` pastes another object's patch over it. The target is the
    request's box, else the blob its ``target`` phrase names."""

    name: ClassVar[str] = "opencv"

    def edit(self, image: Image, request: EditRequest) -> Image:
        import cv2
        import numpy as np

        rgb = classic_vision.to_rgb_array(image).copy()
        blobs = classic_vision.segment(rgb)
        target = self._target(rgb, blobs, request)
        if request.strategy == "color":
            hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
            hue = hsv[..., 0].astype(np.int16)
            current = int(np.median(hue[target]))
            wanted = classic_vision.HUE_CENTRES.get((request.new_value or "").strip().lower())
            if wanted is None or abs(wanted - current) < 10:
                wanted = (current + 90) % 180
            hue[target] = (hue[target] + (wanted - current)) % 180
            hsv[..., 0] = hue.astype(np.uint8)
            rgb[target] = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[target]  # the round trip is lossy: keep the rest
            return encode_png(rgb)
        if request.strategy == "remove":
            grown = cv2.dilate(target.astype(np.uint8), np.ones((5, 5), np.uint8), iterations=2)
            return encode_png(cv2.inpaint(rgb, grown, 5, cv2.INPAINT_TELEA))
        if request.strategy == "replace":
            donor = self._donor(blobs, target, request.new_value)
            x0, y0, x1, y1 = _mask_box(target)
            dx0, dy0, dx1, dy1 = donor.box
            patch = cv2.resize(rgb[dy0:dy1, dx0:dx1], (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
            patch_mask = cv2.resize(donor.mask[dy0:dy1, dx0:dx1].astype(np.uint8), (x1 - x0, y1 - y0),
                                    interpolation=cv2.INTER_NEAREST).astype(bool)
            background = cv2.inpaint(rgb, cv2.dilate(target.astype(np.uint8), np.ones((5, 5), np.uint8), 2), 5,
                                     cv2.INPAINT_TELEA)
            region = background[y0:y1, x0:x1]
            region[patch_mask] = patch[patch_mask]
            return encode_png(background)
        raise ValueError(f"the opencv editor needs strategy color, remove or replace, got {request.strategy!r}")

    @staticmethod
    def _target(rgb: Any, blobs: list[classic_vision.Blob], request: EditRequest) -> Any:
        import numpy as np

        if request.box is not None:
            x0, y0, x1, y1 = (int(v) for v in request.box)
            inside = [b for b in blobs if b.box[0] >= x0 - 2 and b.box[1] >= y0 - 2 and b.box[2] <= x1 + 2
                      and b.box[3] <= y1 + 2]
            if inside:
                return inside[0].mask
            mask = np.zeros(rgb.shape[:2], bool)
            mask[y0:y1, x0:x1] = True
            return mask
        blob = classic_vision.find(blobs, request.target or "")
        if blob is None:
            raise ValueError(f"the opencv editor found no object matching {request.target!r} "
                             f"(objects seen: {', '.join(b.name for b in blobs) or 'none'})")
        return blob.mask

    @staticmethod
    def _donor(blobs: list[classic_vision.Blob], target: Any, wanted: str | None) -> classic_vision.Blob:
        others = [b for b in blobs if not (b.mask & target).any()]
        if not others:
            raise ValueError("the opencv editor's replace needs another object in the image to paste")
        return classic_vision.find(others, wanted or "") or others[0]


def _mask_box(mask: Any) -> tuple[int, int, int, int]:
    import numpy as np

    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


@dataclass
class DiffusersEditor(ImageEditor):
    """Any image+prompt diffusers pipeline, by class name. The defaults are the ProgressLM appendix's settings
    for Qwen-Image-Edit: ``pipeline_class`` QwenImageEditPipeline, ``num_inference_steps`` 50, ``true_cfg_scale``
    4.0, ``negative_prompt`` " ", ``seed`` 42. Settings the pipeline's ``__call__`` does not take are left out,
    so the same section drives InstructPix2Pix or another editor. ``device`` and ``dtype`` choose placement."""

    name: ClassVar[str] = "diffusers"
    DEFAULTS: ClassVar[dict[str, Any]] = {"pipeline_class": "QwenImageEditPipeline", "num_inference_steps": 50,
                                          "true_cfg_scale": 4.0, "negative_prompt": " ", "seed": 42}

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the diffusers editor needs `model`: a pipeline folder")
        self.params = {**self.DEFAULTS, **self.params}
        self._pipeline: Any = None

    def _load(self) -> Any:
        if self._pipeline is None:
            import diffusers

            device = resolve_device(self.params.get("device"))
            dtype = resolve_dtype(self.params.get("dtype"), device)
            pipeline_class = getattr(diffusers, str(self.params["pipeline_class"]))
            self._pipeline = pipeline_class.from_pretrained(self.model, dtype=dtype).to(device)
            self._pipeline.set_progress_bar_config(disable=True)
        return self._pipeline

    def edit(self, image: Image, request: EditRequest) -> Image:
        import torch

        pipeline = self._load()
        accepted = set(inspect.signature(pipeline.__call__).parameters)
        generator = torch.Generator(device="cpu").manual_seed(int(self.params["seed"]))
        skip = {"pipeline_class", "seed", "device", "dtype", "batch_size"}
        call = {k: v for k, v in self.params.items() if k not in skip and k in accepted}
        output = pipeline(image=decode_image(image), prompt=request.prompt, generator=generator, output_type="pil",
                          **call)
        return encode_png(output.images[0])
