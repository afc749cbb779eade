"""Structured output over any chat backend: ask, parse, validate against a pydantic model, repair, retry.

The format instructions and the repair prompt live here beside the parsers that read the answers. A stage gets
back either a validated value or a failure that keeps every raw answer, which it quarantines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from tasks.models.base import ChatBackend, Generation, Message

T = TypeVar("T", bound=BaseModel)
Format = Literal["json", "tags"]
PROMPT_VERSION = "structured-v1"

JSON_INSTRUCTION = (
    "Answer with one JSON object and nothing else. It must have exactly these fields:\n{fields}"
)
TAGS_INSTRUCTION = (
    "Answer with these tags, each once, in this order, and nothing outside them:\n{fields}"
)
REPAIR_PROMPT = (
    "Your previous answer could not be used: {problem}\n"
    "Answer the same request again. {instruction}"
)


@dataclass
class StructuredResult(Generic[T]):
    value: T | None
    raw: list[str] = field(default_factory=list)  # every answer the model gave, in order
    problems: list[str] = field(default_factory=list)  # why each rejected answer was rejected

    @property
    def ok(self) -> bool:
        return self.value is not None

    def failure_reason(self) -> str:
        return f"no valid structured answer after {len(self.raw)} attempts; last problem: {self.problems[-1]}"


def describe_fields(model: type[BaseModel], fmt: Format) -> str:
    lines = []
    for name, info in model.model_fields.items():
        kind = _type_name(info.annotation)
        hint = f" - {info.description}" if info.description else ""
        lines.append(f'- "{name}": {kind}{hint}' if fmt == "json" else f"<{name}>{kind}</{name}>{hint}")
    return "\n".join(lines)


def instruction(model: type[BaseModel], fmt: Format) -> str:
    template = JSON_INSTRUCTION if fmt == "json" else TAGS_INSTRUCTION
    return template.format(fields=describe_fields(model, fmt))


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``, inside a ``` fence or in running text."""
    decoder = json.JSONDecoder()
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    sources = [fenced.group(1), text] if fenced else [text]
    for source in sources:
        position = source.find("{")
        while position != -1:
            try:
                value, _ = decoder.raw_decode(source, position)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                return value
            position = source.find("{", position + 1)
    raise ValueError("the answer holds no JSON object")


def strip_thinking(text: str) -> str:
    """A reasoning model's ``<think>...</think>`` block is not its answer (a chat template may leave only the
    closing tag)."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL | re.IGNORECASE)
    return text.split("</think>")[-1].strip()


def parse_json_array(text: str) -> list[Any]:
    """The first JSON array in ``text``, inside a ``` fence or in running text."""
    fenced = re.search(r"```(?:json)?\s*(\[.*?\])\s*```", text, re.DOTALL)
    source = fenced.group(1) if fenced else text
    start = source.find("[")
    if start == -1:
        raise ValueError("the answer holds no JSON array")
    try:
        value, _ = json.JSONDecoder().raw_decode(source, start)
    except json.JSONDecodeError as error:
        raise ValueError(f"the JSON array is malformed ({error.msg} at column {error.colno})") from None
    if not isinstance(value, list):
        raise ValueError("the answer is not a JSON array")
    return value


def parse_tags(text: str, names: list[str]) -> dict[str, str]:
    """``<name>value</name>`` for each name; a missing tag is an error."""
    found: dict[str, str] = {}
    missing = []
    for name in names:
        match = re.search(rf"<{re.escape(name)}>(.*?)</{re.escape(name)}>", text, re.DOTALL)
        if match:
            found[name] = match.group(1).strip()
        else:
            missing.append(name)
    if missing:
        raise ValueError(f"missing tag(s) {', '.join(f'<{m}>' for m in missing)}")
    return found


def parse_answer(text: str, model: type[T], fmt: Format) -> T:
    data: dict[str, Any] = (parse_json_object(text) if fmt == "json"
                            else parse_tags(text, list(model.model_fields)))
    return model.model_validate(data)


def ask_structured(chat: ChatBackend, messages: list[Message], model: type[T], *, fmt: Format = "json",
                   generation: Generation = Generation(), retries: int = 2) -> StructuredResult[T]:
    """Ask for an answer shaped like ``model``.

    The first answer that fails to parse or validate gets one repair turn (the model sees its answer and the
    problem); after that come up to ``retries`` fresh attempts with new seeds. All raw answers are kept.
    """
    result: StructuredResult[T] = StructuredResult(value=None)
    asked = [*messages[:-1], _with_instruction(messages[-1], instruction(model, fmt))]
    conversation = asked
    for attempt in range(retries + 2):
        seed = None if generation.seed is None else generation.seed + attempt
        text = chat.complete(conversation, replace(generation, seed=seed))
        result.raw.append(text)
        try:
            result.value = parse_answer(text, model, fmt)
            return result
        except (ValueError, ValidationError) as error:
            problem = _problem(error)
            result.problems.append(problem)
        if attempt == 0:
            conversation = [*asked, Message("assistant", (text,)),
                            Message.user(REPAIR_PROMPT.format(problem=problem, instruction=instruction(model, fmt)))]
        else:
            conversation = asked
    return result


def _with_instruction(message: Message, text: str) -> Message:
    return Message(message.role, (*message.parts, "\n\n" + text))


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in error.errors())
    return str(error)


def _type_name(annotation: Any) -> str:
    name = getattr(annotation, "__name__", None)
    return {"str": "string", "int": "integer", "float": "number", "bool": "true or false"}.get(
        name or "", str(annotation).replace("typing.", ""))


@dataclass
class ParsedAnswer:
    value: Any  # None when no answer could be parsed
    answers: list[str]  # every raw answer, in order
    problem: str | None = None  # why the last one was rejected


def ask_until_parsed(chat: ChatBackend, prompt: str, parse: Any, *, image: bytes | None = None, retries: int = 2,
                     generation: Generation = Generation(max_tokens=4096)) -> ParsedAnswer:
    """For answers whose shape is not a pydantic model (arrays, Python lists): ask (with the image, if any); an
    answer ``parse`` rejects with a ValueError is shown back with the problem and asked again."""
    question = [Message.user(image, prompt) if image is not None else Message.user(prompt)]
    conversation = question
    answers: list[str] = []
    problem = None
    for _ in range(retries + 1):
        text = chat.complete(conversation, generation)
        answers.append(text)
        try:
            return ParsedAnswer(parse(text), answers)
        except ValueError as error:
            problem = str(error)
            conversation = [*question, Message("assistant", (text,)),
                            Message.user(f"That answer cannot be used: {problem}. Answer again, in the asked format "
                                         f"only.")]
    return ParsedAnswer(None, answers, problem)
