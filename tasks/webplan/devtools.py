"""A direct DevTools connection to the page ChromeDriver drives, and the key events ChromeDriver's ``send_keys`` sends.

Every call through ChromeDriver (its script call, or its ``execute_cdp_cmd`` relay) is an HTTP request that waits
for its answer before the next is sent: a page script 3.1 ms that way against 0.3 ms over the page's own DevTools
socket, three arrow presses on the slider 36 ms through ``send_keys`` against 7 ms as six key events sent at once
on the socket (measured on this 2-core machine at load 3). Chromium handles a socket's commands in the order sent,
so commands sent together (``DevTools.batch``) still reach the page one after the other, as ChromeDriver sends them.

``key_events`` gives, for the keys ``send_keys`` is given, the very ``Input.dispatchKeyEvent`` parameters
ChromeDriver 156 sends (read from its verbose log): a character as rawKeyDown, char and keyUp with its US-layout
``code`` and ``windowsVirtualKeyCode``, a shifted one between a Shift press and release, a key without text (arrows,
Backspace) as rawKeyDown and keyUp, Ctrl held from where it is pressed to the end, its letters carrying the editing
command (Ctrl+A: ``SelectAll``). Keys outside the table give None: the caller leaves those to ``send_keys``.
"""

from __future__ import annotations

import json
import string
from typing import Any

# Selenium's codes for the keys without text that the builds press (selenium.webdriver.common.keys.Keys).
_NAMED = {"\ue003": ("Backspace", "Backspace", 8), "\ue012": ("ArrowLeft", "ArrowLeft", 37),
          "\ue014": ("ArrowRight", "ArrowRight", 39)}
_CONTROL = "\ue009"
_CONTROL_COMMANDS = {"a": "SelectAll"}
# US-layout punctuation: (unshifted, shifted, code, virtual key code).
_PUNCTUATION = ((";", ":", "Semicolon", 186), ("=", "+", "Equal", 187), (",", "<", "Comma", 188),
                ("-", "_", "Minus", 189), (".", ">", "Period", 190), ("/", "?", "Slash", 191),
                ("`", "~", "Backquote", 192), ("[", "{", "BracketLeft", 219), ("\\", "|", "Backslash", 220),
                ("]", "}", "BracketRight", 221), ("'", '"', "Quote", 222))
_SHIFTED_DIGITS = ")!@#$%^&*("


def _characters() -> dict[str, tuple[str, int, str, bool]]:
    """Each printable ASCII character: (code, virtual key code, unmodified text, needs Shift)."""
    table = {" ": ("Space", 32, " ", False)}
    for letter in string.ascii_lowercase:
        table[letter] = (f"Key{letter.upper()}", ord(letter.upper()), letter, False)
        table[letter.upper()] = (f"Key{letter.upper()}", ord(letter.upper()), letter, True)
    for digit, shifted in zip(string.digits, _SHIFTED_DIGITS, strict=True):
        table[digit] = (f"Digit{digit}", ord(digit), digit, False)
        table[shifted] = (f"Digit{digit}", ord(digit), digit, True)
    for plain, shifted, code, virtual in _PUNCTUATION:
        table[plain] = (code, virtual, plain, False)
        table[shifted] = (code, virtual, plain, True)
    return table


CHARACTERS = _characters()


def _event(kind: str, key: str, code: str, virtual: int, text: str = "", unmodified: str = "", modifiers: int = 0,
           commands: list[str] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": virtual,
                             "text": text, "unmodifiedText": unmodified, "modifiers": modifiers}
    if commands is not None:
        event["commands"] = commands
    return event


def _character(char: str, control: bool) -> list[dict[str, Any]] | None:
    code, virtual, unmodified, shift = CHARACTERS[char]
    if control and (shift or char not in _CONTROL_COMMANDS):
        return None
    if control:
        return [_event(kind, char, code, virtual, char, unmodified, 2, [_CONTROL_COMMANDS[char]])
                for kind in ("rawKeyDown", "char", "keyUp")]
    pressed = [_event(kind, char, code, virtual, char, unmodified, 8 if shift else 0)
               for kind in ("rawKeyDown", "char", "keyUp")]
    if not shift:
        return pressed
    return [_event("rawKeyDown", "Shift", "ShiftLeft", 16), *pressed, _event("keyUp", "Shift", "ShiftLeft", 16)]


def key_events(keys: str) -> list[dict[str, Any]] | None:
    """ChromeDriver's key events for ``send_keys(keys)``, or None where a key is not in the table."""
    events: list[dict[str, Any]] = []
    control = False
    for key in keys:
        if key == _CONTROL and not control:
            control = True
            events.append(_event("rawKeyDown", "Control", "ControlLeft", 17, modifiers=2, commands=[""]))
        elif key in _NAMED and not control:
            name, code, virtual = _NAMED[key]
            events += [_event(kind, name, code, virtual) for kind in ("rawKeyDown", "keyUp")]
        elif key in CHARACTERS and (pressed := _character(key, control)) is not None:
            events += pressed
        else:
            return None
    if control:  # ChromeDriver lets go of a modifier still held when the keys end
        events.append(_event("keyUp", "Control", "ControlLeft", 17))
    return events


class DevToolsError(RuntimeError):
    pass


class DevTools:
    """The page's own DevTools socket (``webSocketDebuggerUrl``), beside ChromeDriver's connection."""

    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        import websocket

        # Chromium refuses a socket whose handshake names an origin it was not started to allow
        self._socket = websocket.create_connection(url, suppress_origin=True, timeout=timeout_s)
        self._last = 0

    def batch(self, commands: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Every command's result, the commands sent at once and carried out in order; the first error raised."""
        first = self._last + 1
        for method, params in commands:
            self._last += 1
            self._socket.send(json.dumps({"id": self._last, "method": method, "params": params}))
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < len(commands):
            message = json.loads(self._socket.recv())
            if first <= message.get("id", 0) <= self._last:
                answers[message["id"]] = message
        results = []
        for number, (method, _) in enumerate(commands, first):
            if "error" in answers[number]:
                raise DevToolsError(f"{method}: {answers[number]['error'].get('message', answers[number]['error'])}")
            results.append(answers[number].get("result", {}))
        return results

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.batch([(method, params or {})])[0]

    def close(self) -> None:
        self._socket.close()
