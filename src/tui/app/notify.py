"""Telling a person something happened: toast, bell, and an OSC 9 / OSC 777 desktop
notification that many terminals show, over SSH too."""

from __future__ import annotations

import os
from typing import Literal, TextIO

OscMode = Literal["off", "osc9", "osc777"]


def osc_sequence(mode: OscMode, title: str, body: str) -> str:
    clean = (title + ": " + body).replace("\x1b", "").replace("\x07", "")
    if mode == "osc9":
        return f"\x1b]9;{clean}\x07"
    if mode == "osc777":
        t = title.replace(";", ",").replace("\x1b", "").replace("\x07", "")
        b = body.replace(";", ",").replace("\x1b", "").replace("\x07", "")
        return f"\x1b]777;notify;{t};{b}\x07"
    return ""


def default_osc_mode(configured: str = "") -> OscMode:
    # OSC 777 is understood by VTE terminals and urxvt; OSC 9 by iTerm2, kitty, WezTerm,
    # Windows Terminal and ghostty. TUI_NOTIFY=off|osc9|osc777 overrides
    # [settings] notifications, which overrides the guess ("auto").
    for choice in (os.environ.get("TUI_NOTIFY", "").lower(), configured):
        if choice in ("off", "osc9", "osc777"):
            return choice  # type: ignore[return-value]
    return "osc777" if os.environ.get("VTE_VERSION") else "osc9"


def desktop_notify(stream: TextIO, mode: OscMode, title: str, body: str) -> None:
    seq = osc_sequence(mode, title, body)
    if seq:
        stream.write(seq)
        stream.flush()
