"""lmms-eval's own command line, run with a model that answers from a file: ``python lmms_eval_run.py ANSWERS
LMMS-EVAL-ARGS...`` (run by the harness tests in a subprocess with lmms-eval on the path, tests/support/harnesses.py).

ANSWERS is JSON ``{strategy: {index: answer}}``: the model answers a row by its ``strategy`` and ``index`` columns
(an empty answer where it has none). It is registered in lmms-eval's model registry as ``bw_answers`` (a custom
model, as lmms-eval supports them) and checks on every request what lmms-eval hands a model: the row's images
through the task's ``doc_to_visual`` and its question in the prompt. Everything else, the task folder's loading, the
hooks, the aggregation, the group and the ``--log_samples`` files, is lmms-eval's own.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from lmms_eval.api.model import lmms
from lmms_eval.models import MODEL_REGISTRY_V2
from lmms_eval.models.registry_v2 import ModelManifest


class FromAnswers(lmms):
    def __init__(self, answers: str = "", **kwargs: Any) -> None:
        super().__init__()
        with open(answers, encoding="utf-8") as handle:
            self.answers = json.load(handle)

    def generate_until(self, requests: list[Any]) -> list[str]:
        replies = []
        for request in requests:
            context, _generation, to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            images = to_visual(doc)
            if not images or any(image.size[0] < 1 for image in images):
                raise ValueError(f"{task} doc {doc_id}: no images")
            if doc["question"] not in context:
                raise ValueError(f"{task} doc {doc_id}: the prompt does not hold the row's question")
            replies.append(self.answers.get(doc["strategy"], {}).get(doc["index"], ""))
        return replies

    def loglikelihood(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError

    def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
        raise NotImplementedError


if __name__ == "__main__":
    sys.modules.setdefault("lmms_eval_run", sys.modules["__main__"])
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id="bw_answers",
                                                      simple_class_path="lmms_eval_run.FromAnswers"), overwrite=True)
    from lmms_eval.cli.dispatch import main

    answers, *arguments = sys.argv[1:]
    sys.argv = ["lmms-eval", "--model", "bw_answers", "--model_args", f"answers={answers}", *arguments]
    main()
