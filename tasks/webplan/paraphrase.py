"""Actions in plain words (the paper's Sec. 5.1: "Target element: [button] Search, Action: CLICK" becomes "Click on
the search button", done there by GPT-4o and checked by people).

Two paraphrasers read the same raw form, Multimodal-Mind2Web's ``[role]  name -> OP[: value]`` (the MiniWob++
solvers and every importer write it): ``TemplateParaphraser`` (offline, a sentence per operation) and
``ChatParaphraser`` (the chat role, when ``[models.chat]`` is configured; its answers cached in the catalog, and an
empty or multi-line answer replaced by the template's sentence and counted). Either way a person reviews every
instance before it is released.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

RAW = re.compile(r"^\s*\[(?P<role>[^\]]*)\]\s*(?P<name>.*?)\s*->\s*(?P<op>[A-Za-z_ ]+?)\s*(?::\s*(?P<value>.*))?$")
ROLE_WORDS = {"textbox": "field", "combobox": "menu", "searchbox": "search box", "svg": "icon", "img": "image",
              "span": "item", "div": "item", "a": "link", "li": "item", "": "element"}
PROMPT = ("Rewrite this web browser action as one short imperative sentence a person would follow, naming the "
          "element and any text to enter. Answer with the sentence only.\nAction: {raw}")


class UnreadableActionError(ValueError):
    pass


def parts(raw: str) -> tuple[str, str, str, str]:
    """(role, name, operation, value) of a raw action; an action in no known form is an error naming it."""
    match = RAW.match(raw)
    if match is None:
        raise UnreadableActionError(f"cannot read the action {raw!r} (expected '[role] name -> OP[: value]')")
    return (match["role"].strip().lower(), " ".join(match["name"].split()), match["op"].strip().upper(),
            (match["value"] or "").strip())


def template_words(raw: str) -> str:
    role, name, op, value = parts(raw)
    kind = ROLE_WORDS.get(role, role)
    thing = f"the {name} {kind}" if name else f"the {kind}"
    if role == "element":  # GUIAct names an element by where it is: "the element at (0.42, 0.18)"
        thing = f"the element {name}".strip()
    if op in ("TYPE", "INPUT"):
        return f'Type "{value}" into {thing}'
    if op == "SELECT":
        return f'Select "{value}" in {thing}'
    if op == "HOVER":
        return f"Hover over {thing}"
    if op in ("ENTER", "PRESS ENTER"):
        return f"Press Enter in {thing}"
    if op == "SCROLL":
        return f"Scroll {value.lower() or 'down'} the page"
    if op == "CLICK":
        return f"Click on {thing}"
    return f"{op.capitalize()} {thing}" + (f' with "{value}"' if value else "")


class TemplateParaphraser:
    name = "template"

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def words(self, raws: list[str]) -> list[str]:
        return [template_words(raw) for raw in raws]


@dataclass
class ChatParaphraser:
    chat: Any  # a ChatBackend
    fallbacks: list[str] = field(default_factory=list)  # the raw actions whose answers were replaced

    @property
    def name(self) -> str:
        return f"chat {self.chat.name} {self.chat.model}"

    @property
    def params(self) -> dict[str, Any]:
        return {"backend": self.chat.name, "model": self.chat.model, "prompt": PROMPT}

    def words(self, raws: list[str]) -> list[str]:
        from tasks.models.base import Generation, Message

        answers = self.chat.answer_all([[Message.user(PROMPT.format(raw=raw))] for raw in raws],
                                       Generation(max_tokens=64, temperature=0.0))
        found = []
        for raw, answer in zip(raws, answers, strict=True):
            text = "" if isinstance(answer, Exception) else " ".join(str(answer).split()).strip().rstrip(".")
            if not text or "\n" in str(answer).strip():
                self.fallbacks.append(raw)
                text = template_words(raw)
            found.append(text)
        return found


def paraphraser(settings: Any, cache: Any = None) -> TemplateParaphraser | ChatParaphraser:
    """The chat role's paraphraser when ``[models.chat]`` is configured and ``[webplan] paraphrase`` is ``auto``
    or ``chat``, else the templates."""
    from tasks.models.registry import has_backend, load_backend

    wanted = settings.webplan.paraphrase
    if wanted == "chat" or (wanted == "auto" and has_backend(settings, "chat")):
        return ChatParaphraser(load_backend(settings, "chat", cache=cache))
    return TemplateParaphraser()
