"""Web trajectories from the files users hold, read row by row: a bad row or trajectory is reported (file, row or
id, and the reason) and the rest is imported. Every file is read through the source door of its folder
(``tasks.sources.door``): inside the folder, images decoded whole within the pixel limit, JSON checked entry by
entry, a table that cannot be read refused as a file.

- ``jsonl`` (our format; ``trajectories.jsonl`` in the folder), one trajectory per line::

      {"id": "t1", "task": "Find ...", "website": "example.com",
       "steps": [{"screenshot": "frames/t1_0.png", "action_raw": "[button]  Search -> CLICK",
                  "action": "Click on the search button"}, ...],
       "final_screenshot": "frames/t1_end.png"}

  ``screenshot`` is the page before that step's action; ``final_screenshot`` is optional (i_T falls back to the
  last step's); each step needs ``action_raw`` or ``action`` (plain words; paraphrased from ``action_raw`` when
  absent).
- ``mm-mind2web``: Multimodal-Mind2Web's parquet files (``*.parquet`` in the folder), a row per action with
  ``annotation_id``, ``confirmed_task``, ``website``, ``screenshot`` (an image struct with ``bytes``, as the
  dataset hub writes it, or raw bytes), ``target_action_index`` and ``target_action_reprs`` (else
  ``action_reprs[target_action_index]``); rows grouped by ``annotation_id`` and ordered by the index. It has no
  screenshot after the last action.
- ``guiact``: GUIAct web-multi, ``<split>_data.json`` (a list of steps with ``uid`` like
  ``uid_record_02472_step_00``, ``image_id``, ``question``, ``actions_label``: one action or a list of them, each
  with ``name`` and ``text``/``element`` where it has them) beside ``<split>_images.parquet`` (``base64`` JPEG per
  image id, the id in an ``image_id``/``uid`` column or the index). Steps grouped by the ``uid_record_N`` prefix and
  ordered by step; a step holding several actions has one screenshot, taken before its first (GUICourse issue #12):
  only its first action is marked ``fresh``.
"""

from __future__ import annotations

import base64
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder, decode_checked
from tasks.sources.rows import Problem, RowError, loads, text_field, whole
from tasks.webplan.trajectories import WebStep, WebTrajectory

FORMATS = ("jsonl", "mm-mind2web", "guiact")
MAX_STEPS = 200
# trajectory id -> step number -> (task and website, the step's actions: more than one where a step holds several)
Groups = dict[str, dict[int, tuple[dict[str, Any], list[WebStep]]]]


@dataclass
class Imported:
    trajectories: list[WebTrajectory]
    problems: list[Problem]


def _image(data: bytes, what: str) -> bytes:
    """``data`` if it decodes whole within the pixel limit (a truncated file or a bomb is refused), else RowError."""
    decode_checked(data, what)
    return data


def _file_image(door: SourceFolder, name: Any, what: str) -> bytes:
    relative = text_field(name, what)
    if not door.exists(relative):
        door.path(relative)  # a name leading out is refused as such
        raise RowError(f"{what} {name!r} does not exist")
    return door.read_image(relative)[0]


def _jsonl_trajectory(root: SourceFolder, row: dict[str, Any]) -> WebTrajectory:
    steps_in = row.get("steps")
    if not isinstance(steps_in, list) or not steps_in:
        raise RowError("steps must be a non-empty list")
    if len(steps_in) > MAX_STEPS:
        raise RowError(f"{len(steps_in)} steps (more than {MAX_STEPS})")
    steps = []
    for number, step in enumerate(steps_in, 1):
        if not isinstance(step, dict):
            raise RowError(f"step {number} must be an object")
        raw, words = step.get("action_raw") or "", step.get("action") or ""
        if not isinstance(raw, str) or not isinstance(words, str) or not (raw.strip() or words.strip()):
            raise RowError(f"step {number} needs action_raw or action text")
        steps.append(WebStep(action_raw=raw or words, action=words,
                             screenshot=_file_image(root, step.get("screenshot"), f"step {number} screenshot")))
    final = row.get("final_screenshot")
    return WebTrajectory(id=text_field(row.get("id"), "id"), source="jsonl", task=text_field(row.get("task"), "task"),
                         website=str(row.get("website") or ""), steps=tuple(steps),
                         final_screenshot=_file_image(root, final, "final_screenshot") if final else None)


def read_jsonl(folder: Path, allow_symlinks_outside: bool = False) -> Imported:
    root = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    path = root.folder / "trajectories.jsonl"
    if not root.exists("trajectories.jsonl") and not path.is_symlink():
        return Imported([], [Problem(str(folder), "trajectories.jsonl", "nothing found: no trajectories.jsonl")])
    try:
        rows = list(root.lines("trajectories.jsonl"))
    except ValueError as error:  # RowError, OutsideRoot
        return Imported([], [Problem(str(path), "file", str(error))])
    found, problems, seen = [], [], set()
    for number, text, reason in rows:
        locator = f"{path.name} line {number}"
        try:
            if reason:
                raise RowError(reason)
            row = loads(text)  # NaN, 1e400 or a repeated key anywhere refuses the line
            if not isinstance(row, dict):
                raise RowError("a line must be a JSON object")
            trajectory = _jsonl_trajectory(root, row)
            if trajectory.id in seen:
                raise RowError(f"duplicate id {trajectory.id!r} (the first one is kept)")
        except (RowError, OutsideRoot) as error:
            problems.append(Problem(str(path), locator, str(error), text[:2000]))
            continue
        seen.add(trajectory.id)
        found.append(trajectory)
    return Imported(found, problems)


def _parquet_rows(path: Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of a Parquet file, 64 at a time (a dataset's shards are large); RowError when the file is not
    Parquet or breaks while it is read (rows already read were given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        wanted = [c for c in columns or handle.schema_arrow.names if c in handle.schema_arrow.names]
        for batch in handle.iter_batches(batch_size=64, columns=wanted):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as error:
        raise RowError(f"{path.name}: not a readable Parquet file ({str(error).splitlines()[0]})") from None


def _struct_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, dict):
        value = value.get("bytes")
    if not isinstance(value, bytes | bytearray) or not value:
        raise RowError(f"{what} holds no image bytes")
    return _image(bytes(value), what)


def _mind2web_action(row: dict[str, Any]) -> str:
    if isinstance(row.get("target_action_reprs"), str) and row["target_action_reprs"].strip():
        return row["target_action_reprs"]
    reprs = row.get("action_reprs")
    reprs = json.loads(reprs) if isinstance(reprs, str) else reprs
    index = whole(row.get("target_action_index"), "target_action_index")
    if not isinstance(reprs, list) or index >= len(reprs):
        raise RowError("no target_action_reprs and no action_reprs entry at target_action_index")
    return str(reprs[index])


def read_mind2web(folder: Path, allow_symlinks_outside: bool = False) -> Imported:
    root = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    files = root.files(suffixes=(".parquet",))
    problems = [Problem(str(folder), p.name, reason) for p, reason in files if reason]
    groups: Groups = defaultdict(dict)
    broken: dict[str, str] = {}
    for path, reason in files:
        if not reason:
            _mind2web_file(root, path, groups, broken, problems)
    if not files:
        problems.append(Problem(str(folder), "*.parquet", "nothing found: no parquet files"))
    return Imported(_grouped("mm-mind2web", groups, broken, problems, str(folder)), problems)


def _mind2web_file(root: SourceFolder, path: Path, groups: Groups, broken: dict[str, str],
                   problems: list[Problem]) -> None:
    """One parquet file's rows into ``groups``; a row refused alone, a file that breaks refused from there on."""
    try:
        rows = _parquet_rows(root.by_name(path.name))
        for number, row in enumerate(rows, 1):
            annotation = str(row.get("annotation_id") or "")
            locator = f"{path.name} row {number}" + (f" (annotation {annotation})" if annotation else "")
            try:
                text_field(row.get("annotation_id"), "annotation_id")
                index = whole(row.get("target_action_index"), "target_action_index", high=MAX_STEPS)
                if index in groups[annotation]:
                    raise RowError(f"a second row for action {index}")
                step = WebStep(action_raw=_mind2web_action(row),
                               screenshot=_struct_bytes(row.get("screenshot"), "screenshot"))
                text_field(row.get("confirmed_task"), "confirmed_task")
            except (RowError, ValueError) as error:
                problems.append(Problem(str(path), locator, str(error)))
                broken.setdefault(annotation, f"its {locator} was refused")
                continue
            groups[annotation][index] = ({"task": row["confirmed_task"], "website": row.get("website") or ""}, [step])
    except RowError as error:
        problems.append(Problem(str(path), "file", str(error)))


def _grouped(source: str, groups: Groups, broken: dict[str, str], problems: list[Problem],
             where: str) -> list[WebTrajectory]:
    """Trajectories from rows grouped by id and numbered by step; a group with a refused row or a gap in its
    numbering is refused whole (a plan with a missing action would be wrong)."""
    found = []
    for group_id, rows in sorted(groups.items()):
        if not group_id:
            continue
        if group_id in broken:
            problems.append(Problem(where, group_id, f"trajectory refused: {broken[group_id]}"))
            continue
        order = sorted(rows)
        if order != list(range(len(order))):
            problems.append(Problem(where, group_id,
                                    f"trajectory refused: its steps are {order}, not 0-{len(order) - 1}"))
            continue
        info = rows[order[0]][0]
        found.append(WebTrajectory(id=group_id, source=source, task=info["task"], website=info["website"],
                                   steps=tuple(step for i in order for step in rows[i][1])))
    return found


GUIACT_OPS = {"click": "CLICK", "hover": "HOVER", "input": "TYPE", "enter": "ENTER", "scroll": "SCROLL",
              "select": "SELECT", "select_text": "SELECT TEXT", "copy": "COPY", "answer": "ANSWER"}
GUIACT_UID = re.compile(r"^(?P<record>.+?)_step_(?P<step>\d+)$")


def _guiact_raw(label: Any) -> str:
    """One GUIAct action in the raw form: the element named by the centre of its box (GUIAct has no element names),
    e.g. ``[element]  at (0.42, 0.18) -> TYPE: tickets``."""
    if not isinstance(label, dict) or label.get("name") not in GUIACT_OPS:
        raise RowError(f"an action must be an object whose name is one of {', '.join(GUIACT_OPS)}, got {label!r}")
    element = label.get("element") or {}
    box = element.get("related") if isinstance(element, dict) else element
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", str(box or ""))]
    where = f"at ({(numbers[0] + numbers[2]) / 2:.2f}, {(numbers[1] + numbers[3]) / 2:.2f})" if len(numbers) == 4 \
        else "on the page"
    text = label.get("text")
    value = f": {text}" if isinstance(text, str) and text.strip() else ""
    return f"[element]  {where} -> {GUIACT_OPS[label['name']]}{value}"


def _guiact_images(door: SourceFolder, name: str) -> dict[str, str]:
    """image id -> base64 JPEG; RowError when the file is missing or not a readable Parquet table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = door.by_name(name)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise RowError(f"{path.name}: not a readable Parquet file ({str(error).splitlines()[0]})") from None
    names = table.column_names
    key = next((c for c in ("image_id", "uid", "__index_level_0__") if c in names), None)
    if "base64" not in names or key is None:
        raise RowError(f"{path.name}: needs a base64 column and an image_id (or index) column, has {names}")
    return dict(zip(map(str, table.column(key).to_pylist()), table.column("base64").to_pylist(), strict=True))


def read_guiact(folder: Path, allow_symlinks_outside: bool = False) -> Imported:
    root = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    listed = [(p, reason) for p, reason in root.entries() if p.name.endswith("_data.json")]
    problems = [Problem(str(p), p.name, reason) for p, reason in listed if reason]
    pairs = [p for p, reason in listed if not reason]
    groups: Groups = defaultdict(dict)
    broken: dict[str, str] = {}
    for data_path in pairs:
        try:
            images = _guiact_images(root, data_path.name.replace("_data.json", "_images.parquet"))
            entries = root.json_entries(data_path.name, list_only=True)  # a list of steps
        except (ValueError, OSError) as error:  # RowError, OutsideRoot
            problems.append(Problem(str(data_path), data_path.name, str(error)))
            continue
        for index, _, _, row, why in entries:
            locator = f"{data_path.name} item {index + 1}"
            if why:
                problems.append(Problem(str(data_path), locator, why))
                continue
            _guiact_row(row, locator, images, groups, broken, problems, str(data_path))
    if not pairs:
        problems.append(Problem(str(folder), "*_data.json", "nothing found: no <split>_data.json"))
    return Imported(_grouped("guiact", groups, broken, problems, str(folder)), problems)


def _guiact_row(row: Any, locator: str, images: dict[str, str], groups: Groups, broken: dict[str, str],
                problems: list[Problem], where: str) -> None:
    record = ""
    try:
        if not isinstance(row, dict):
            raise RowError("must be an object")
        match = GUIACT_UID.match(text_field(row.get("uid"), "uid"))
        if match is None:
            raise RowError(f"uid {row['uid']!r} is not <record>_step_<n>")
        record, step = match["record"], int(match["step"])
        labels = row.get("actions_label")
        labels = labels if isinstance(labels, list) else [labels]
        raws = [_guiact_raw(label) for label in labels]
        encoded = images.get(str(row.get("image_id") or row["uid"]))
        if encoded is None:
            raise RowError(f"no image {row.get('image_id') or row['uid']!r} in the images parquet")
        shot = _image(base64.b64decode(encoded), "its image")
        if step in groups[record]:
            raise RowError(f"a second item for step {step}")
        task = text_field(row.get("question"), "question")
    except (RowError, ValueError) as error:
        problems.append(Problem(where, locator, str(error)))
        if record:
            broken.setdefault(record, f"its {locator} was refused")
        return
    steps = [WebStep(action_raw=raw, screenshot=shot, fresh=i == 0) for i, raw in enumerate(raws)]
    groups[record][step] = ({"task": task, "website": ""}, steps)


READERS = {"jsonl": read_jsonl, "mm-mind2web": read_mind2web, "guiact": read_guiact}


def read_trajectories(folder: Path, fmt: str, allow_symlinks_outside: bool = False) -> Imported:
    if fmt not in READERS:
        raise ValueError(f"unknown trajectory format {fmt!r}: {', '.join(READERS)}")
    return READERS[fmt](folder, allow_symlinks_outside)
