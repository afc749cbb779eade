"""Scripted expert solvers for multi-step MiniWob++ tasks: the bundled trajectory source of the temporal-ordering
and real-web plan-assessment tests, so both run end to end without the dataset hub.

A solver reads the instruction's fields (miniwob's own field extractors) and the page, and yields one action at a
time (it may look at the page again after each one: search results appear only after Search). Each action names
its element as Multimodal-Mind2Web writes it (``[textbox] Username -> TYPE: macie``), so the recorded trajectories
go through the same paraphrase stage as imported ones. The recorder keeps a trajectory only when MiniWob++ rewards
its last action with 1: an expert trajectory is verified by the page, never assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tasks.webplan.browser import Episode, MiniWobBrowser


@dataclass(frozen=True)
class WebAction:
    element: Any  # the Selenium element acted on
    role: str  # what Mind2Web's action_reprs call it: textbox, button, link, checkbox, span...
    name: str  # its visible name
    op: str  # CLICK, TYPE, SELECT
    value: str = ""

    @property
    def raw(self) -> str:
        """Multimodal-Mind2Web's ``action_reprs`` form: ``[role]  name -> OP[: value]``."""
        return f"[{self.role}]  {self.name} -> {self.op}" + (f": {self.value}" if self.op != "CLICK" else "")


Solver = Callable[[MiniWobBrowser, Episode], Iterator[WebAction]]


def _text(element: Any) -> str:
    return " ".join(element.text.split())


def _by_text(browser: MiniWobBrowser, css: str, text: str) -> Any:
    for element in browser.find_all(css):
        if _text(element) == text:
            return element
    raise LookupError(f"no {css} reads {text!r}")


def login_user(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    yield WebAction(browser.find("#username"), "textbox", "Username", "TYPE", episode.fields["username"])
    yield WebAction(browser.find("#password"), "textbox", "Password", "TYPE", episode.fields["password"])
    yield WebAction(browser.find("#subbtn"), "button", "Login", "CLICK")


def enter_password(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    yield WebAction(browser.find("#password"), "textbox", "Password", "TYPE", episode.fields["target"])
    yield WebAction(browser.find("#verify"), "textbox", "Verify password", "TYPE", episode.fields["target"])
    yield WebAction(browser.find("#subbtn"), "button", "Submit", "CLICK")


def search_engine(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    query = episode.fields["query"]
    wanted = int(re.sub(r"\D", "", episode.fields["rank"])) - 1
    yield WebAction(browser.find("#search-text"), "textbox", "Search", "TYPE", query)
    yield WebAction(browser.find("#search"), "button", "Search", "CLICK")
    page = wanted // 3 + 1
    if page > 1:
        yield WebAction(_by_text(browser, "#pagination a", str(page)), "link", f"Page {page}", "CLICK")
    link = browser.find(f"#page-content a[data-result='{wanted}']")
    yield WebAction(link, "link", _text(link), "CLICK")


def email_inbox(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    sender, task = episode.fields["by"], episode.fields["task"]
    thread = next(t for t in browser.find_all("#main .email-thread")
                  if _text(t.find_element("css selector", ".email-sender")) == sender)
    if task in ("delete", "star"):
        icon = "trash" if task == "delete" else "star"
        yield WebAction(thread.find_element("css selector", f".{icon}"), "span", f"{icon} {sender}", "CLICK")
        return
    yield WebAction(thread, "div", f"Email from {sender}", "CLICK")
    if task == "reply":
        yield WebAction(browser.find(".email-reply"), "button", "Reply", "CLICK")
        yield WebAction(browser.find("#reply-text"), "textbox", "Message", "TYPE", episode.fields["message"])
        yield WebAction(browser.find("#send-reply"), "button", "Send", "CLICK")
    else:
        yield WebAction(browser.find(".email-forward"), "button", "Forward", "CLICK")
        yield WebAction(browser.find(".forward-sender"), "textbox", "To", "TYPE", episode.fields["to"])
        yield WebAction(browser.find("#send-forward"), "button", "Send", "CLICK")


def social_media_all(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    button, user = episode.fields["button"], episode.fields["user"]
    for post in browser.find_all("#area .media"):
        if _text(post.find_element("css selector", ".username")) == user:
            control = post.find_element("css selector", f".controls .{button.lower()}")
            yield WebAction(control, "button", f"{button} on a post by {user}", "CLICK")
    yield WebAction(browser.find("#submitRow button"), "button", "Submit", "CLICK")


_LABELS = """
return Array.from(document.querySelectorAll('#area input[type=text]')).map(function (input) {
  if (input.placeholder) { return input.placeholder; }
  for (var probe = input.parentElement; probe && probe.id !== 'area'; probe = probe.parentElement) {
    var text = (probe.innerText || '').trim();
    if (text) { return text; }
  }
  return '';
});
"""


_FIELD_WORDS = {"genre": ("genre",), "director": ("director", "name"), "year": ("year", "date")}


def multi_layouts(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    """The page draws its three fields in one of several layouts (labels beside, above, in a table, as
    placeholders; any order): each field is found by the words nearest to it."""
    inputs = browser.find_all("#area input[type=text]")
    for element, label in zip(inputs, browser.run(_LABELS), strict=True):
        words = label.lower()
        key = next(k for k, said in _FIELD_WORDS.items() if any(w in words for w in said))
        yield WebAction(element, "textbox", label.split("\n")[0].strip(), "TYPE", episode.fields[key])
    buttons = [e for e in browser.find_all("#area button, #area div, #area span, #area input[type=submit]")
               if _text(e) in ("Submit", "Search", "Go!") and not e.find_elements("css selector", "*")]
    yield WebAction(buttons[-1], "button", _text(buttons[-1]), "CLICK")


def navigate_tree(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    """Opens folders breadth first until a visible entry bears the name, then clicks it."""
    target = episode.fields["target"]
    for _ in range(8):
        visible = [e for e in browser.find_all("#tree span") if e.is_displayed()]
        found = [e for e in visible if _text(e) == target]
        if found:
            yield WebAction(found[0], "span", target, "CLICK")
            return
        closed = [e for e in visible if "folder" in (e.get_attribute("class") or "")
                  and "expandable" in (e.find_element("xpath", "..").get_attribute("class") or "")]
        if not closed:
            break
        yield WebAction(closed[0], "folder", _text(closed[0]), "CLICK")
    raise LookupError(f"no entry named {target!r} in the tree")


def click_checkboxes_large(browser: MiniWobBrowser, episode: Episode) -> Iterator[WebAction]:
    names = [value for key, value in sorted(episode.fields.items()) if key.startswith("target")]
    for label in browser.find_all("#area label"):
        if _text(label) in names:
            yield WebAction(label.find_element("css selector", "input"), "checkbox", _text(label), "CLICK")
    yield WebAction(browser.find("#subbtn"), "button", "Submit", "CLICK")


SOLVERS: dict[str, Solver] = {
    "login-user": login_user,
    "enter-password": enter_password,
    "search-engine": search_engine,
    "email-inbox": email_inbox,
    "social-media-all": social_media_all,
    "multi-layouts": multi_layouts,
    "navigate-tree": navigate_tree,
    "click-checkboxes-large": click_checkboxes_large,
}
