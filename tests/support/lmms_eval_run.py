"""lmms-eval's own command line, run with a model that answers from a file: ``python lmms_eval_run.py ANSWERS RECORD
LMMS-EVAL-ARGS...`` (run by the harness tests in a subprocess with lmms-eval on the path, tests/support/harnesses.py).

ANSWERS is JSON ``{strategy: {index: answer}}``: the model answers a row by its ``strategy`` and ``index`` columns
(an empty answer where it has none). It is registered in lmms-eval's model registry as ``bw_answers`` (a custom
model, as lmms-eval supports them) with a chat and a simple implementation: lmms-eval takes the chat one unless
``--force_simple`` is given. The chat model gets what lmms-eval hands its chat models, the task's
``doc_to_messages``, validates the turn with lmms-eval's ``protocol.ChatMessages`` and turns it into the
Hugging Face chat messages its chat models feed a processor (``to_hf_messages``); the simple model gets the prompt
lmms-eval built (``ctx``) and the images of the task's ``doc_to_visual``. Each appends to RECORD (JSON lines) what
it received: task, row index, strategy, and the parts in order (``{"text": ...}``, ``{"image": fingerprint}``) or
the prompt and the images' fingerprints (``image_fingerprint``). Everything else, the task folder's loading, the
hooks, the aggregation, the group and the ``--log_samples`` files, is lmms-eval's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

from lmms_eval.api.model import lmms
from lmms_eval.models import MODEL_REGISTRY_V2
from lmms_eval.models.registry_v2 import ModelManifest


def image_fingerprint(image: Any) -> str:
    """An image by its size and RGB pixels, as a model would see it."""
    rgb = image.convert("RGB")
    return f"{rgb.size[0]}x{rgb.size[1]}:{hashlib.sha256(rgb.tobytes()).hexdigest()}"


class FromAnswers(lmms):
    def __init__(self, answers: str = "", record: str = "", **kwargs: Any) -> None:
        super().__init__()
        with open(answers, encoding="utf-8") as handle:
            self.answers = json.load(handle)
        self.record = record

    def _answer(self, task: str, doc: dict[str, Any], received: dict[str, Any]) -> str:
        with open(self.record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"task": task, "index": doc["index"], "strategy": doc["strategy"],
                                     **received}) + "\n")
        return self.answers.get(doc["strategy"], {}).get(doc["index"], "")

    def generate_until(self, requests: list[Any]) -> list[str]:
        replies = []
        for request in requests:
            context, _generation, to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            images = to_visual(doc)
            if not images or any(image.size[0] < 1 for image in images):
                raise ValueError(f"{task} doc {doc_id}: no images")
            received = {"context": context, "images": [image_fingerprint(image) for image in images]}
            replies.append(self._answer(task, doc, received))
        return replies

    def loglikelihood(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError

    def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
        raise NotImplementedError


class FromAnswersChat(FromAnswers):
    is_simple = False

    def generate_until(self, requests: list[Any]) -> list[str]:
        from lmms_eval.protocol import ChatMessages

        replies = []
        for request in requests:
            _context, to_messages, _generation, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            messages = ChatMessages(messages=to_messages(doc)).to_hf_messages()
            parts = []
            for message in messages:
                if message["role"] != "user":
                    raise ValueError(f"{task} doc {doc_id}: a {message['role']} turn")
                for content in message["content"]:
                    parts.append({"text": content["text"]} if content["type"] == "text"
                                 else {content["type"]: image_fingerprint(content["image"])})
            replies.append(self._answer(task, doc, {"parts": parts}))
        return replies


if __name__ == "__main__":
    sys.modules.setdefault("lmms_eval_run", sys.modules["__main__"])
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id="bw_answers",
                                                      simple_class_path="lmms_eval_run.FromAnswers",
                                                      chat_class_path="lmms_eval_run.FromAnswersChat"),
                                        overwrite=True)
    from lmms_eval.cli.dispatch import main

    answers, record, *arguments = sys.argv[1:]
    sys.argv = ["lmms-eval", "--model", "bw_answers", "--model_args", f"answers={answers},record={record}",
                *arguments]
    main()
    if not os.path.exists(record):  # lmms-eval logs an error of the task folder and exits 0
        sys.exit(f"lmms-eval asked the model nothing ({record} was not written): see its log above")
