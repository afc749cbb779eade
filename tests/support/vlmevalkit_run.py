"""VLMEvalKit's own code over exported TSVs: ``python vlmevalkit_run.py JOB OUT`` (run by the harness tests in a
subprocess with VLMEvalKit on the path and ``$LMUData`` holding the TSVs, tests/support/harnesses.py).

JOB is JSON ``{"configs": [...], "model": NAME, "work_dir": DIR, "formats": ["xlsx", "tsv", "json"], "answers":
{strategy: {index: answer}}}``: ``configs`` are the exported ``run.py --config`` files. For each dataset a config
names: ``build_dataset_from_config`` (the function's own source from ``vlmeval/run.py``, over the classes
``vlmeval/dataset/__init__.py`` exports) builds the dataset class the config names over the TSV, loaded with
``vlmeval.smp.load``; its ``build_prompt`` makes each row's messages (images saved where VLMEvalKit saves them); the
answers stand in for a model; the prediction file is written as ``vlmeval.inference.infer_data_job`` writes it (the
dataset's rows less ``image``, plus ``prediction``, by ``vlmeval.smp.dump`` to ``get_pred_file_path``), once per
format in ``work_dir/<format>/`` (``PRED_FORMAT`` chooses xlsx, tsv or json); a dataset with option columns is then
scored by its own ``evaluate`` with exact matching on the first format's file. OUT gets, per dataset, the class,
each row's messages in order (``parts``: ``{"image": path}`` or ``{"text": ...}``), prompt text, image count, loaded
``answer`` and ``question`` (None where pandas read a blank), its exact-match ``hit``, the prediction file per
format and the accuracy table.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import sys
import types
from pathlib import Path
from typing import Any


def _bare_packages() -> None:
    """``vlmeval`` and ``vlmeval.dataset`` as packages over their folders, without running their ``__init__``
    (which imports every model and dataset VLMEvalKit has)."""
    root = next(Path(p) / "vlmeval" for p in sys.path if (Path(p) / "vlmeval" / "dataset").is_dir())
    for name, folder in (("vlmeval", root), ("vlmeval.dataset", root / "dataset")):
        module = types.ModuleType(name)
        module.__path__ = [str(folder)]
        module.__file__ = str(folder / "__init__.py")
        sys.modules[name] = module
    sys.modules["vlmeval"].dataset = sys.modules["vlmeval.dataset"]  # type: ignore[attr-defined]


def _source_function(path: Path, name: str, namespace: dict[str, Any]) -> Any:
    """The function ``name`` as written in VLMEvalKit's file ``path``, run over ``namespace``."""
    tree = ast.parse(path.read_text())
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)
    exec(compile(ast.Module(body=[function], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name]


def _build_from_config() -> Any:
    """VLMEvalKit's ``build_dataset_from_config`` as written in ``vlmeval/run.py`` (what ``run.py --config`` runs),
    with the dataset classes the exported configs name on ``vlmeval.dataset`` as its ``__init__`` exports them."""
    import copy

    from vlmeval.dataset.image_mcq import MUIRDataset

    package = sys.modules["vlmeval.dataset"]
    package.MUIRDataset = MUIRDataset  # type: ignore[attr-defined]
    root = Path(package.__file__).parents[1]
    return _source_function(root / "run.py", "build_dataset_from_config",
                            {"cp": copy, "supported_video_datasets": {}})


def _text(value: Any) -> Any:
    import pandas as pd

    return None if not isinstance(value, list | dict) and pd.isna(value) else str(value)


def run_dataset(name: str, job: dict[str, Any], build: Any) -> dict[str, Any]:
    from vlmeval.smp import dump, get_intermediate_file_path, get_pred_file_path, load

    dataset = build(name)
    rows, predictions = {}, {}
    for i in range(len(dataset.data)):
        line = dataset.data.iloc[i]
        messages = dataset.build_prompt(line)
        parts = [{m["type"]: m["value"]} for m in messages]
        if any(set(part) - {"image", "text"} for part in parts):
            raise ValueError(f"{name} row {i}: VLMEvalKit's prompt holds more than images and text: {parts}")
        images = [m["value"] for m in messages if m["type"] == "image"]
        missing = [path for path in images if not os.path.isfile(path)]
        if missing:
            raise FileNotFoundError(f"{name} row {i}: VLMEvalKit's prompt names images it did not save: {missing}")
        index, strategy = line["index"], line["strategy"]
        predictions[index] = job["answers"].get(strategy, {}).get(index, "")
        rows[index] = {"strategy": strategy, "parts": parts, "images": len(images),
                       "prompt": "".join(m["value"] for m in messages if m["type"] == "text"),
                       "answer": _text(line["answer"]), "question": _text(line["question"])}
    files = {}
    for file_format in job["formats"]:
        # what vlmeval.inference.infer_data_job writes once every row has its prediction
        os.environ["PRED_FORMAT"] = file_format
        data = dataset.data.copy()
        data["prediction"] = [str(predictions[x]) for x in data["index"]]
        if "image" in data:
            data.pop("image")
        work_dir = os.path.join(job["work_dir"], file_format)
        os.makedirs(work_dir, exist_ok=True)
        files[file_format] = get_pred_file_path(work_dir, job["model"], name)
        dump(data, files[file_format])
    result_file = files[job["formats"][0]]
    os.environ["PRED_FORMAT"] = job["formats"][0]
    done = {"class": type(dataset).__name__, "type": dataset.TYPE, "rows": rows, "pred_files": files,
            "options": "A" in dataset.data}
    if done["options"]:  # the multiple-choice files: an open one is scored by benchwright
        accuracy = dataset.evaluate(result_file, model="exact_matching", nproc=1)
        scored = load(get_intermediate_file_path(result_file, "_exact_matching_result"))
        for index, hit in zip(scored["index"], scored["hit"], strict=True):
            done["rows"][str(index)]["hit"] = int(hit)
        done["accuracy"] = accuracy.to_dict(orient="records")
    return done


def main() -> None:
    job_file, out_file = sys.argv[1:]
    job = json.loads(Path(job_file).read_text())
    _bare_packages()
    build_from_config = _build_from_config()
    done = {}
    for config in job["configs"]:
        data = json.loads(Path(config).read_text())["data"]
        done.update({name: run_dataset(name, job, functools.partial(build_from_config, data)) for name in data})
    Path(out_file).write_text(json.dumps(done, indent=1, default=str))


if __name__ == "__main__":
    main()
