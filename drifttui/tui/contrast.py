"""Legible colours in the light theme, on every screen: a Textual line filter.

The renderers (status line, profile, steps bar, inspector, detail screens, help) name their
colours once, tuned for the dark theme (``#f0a030`` amber, ``#ff3d9a`` origin pink, ``#5fb36b``
green...).  On the light theme's near-white background several of them read at a contrast of
1.4-2.8 (the table has its own light ramp).  Rather than a second palette in every renderer,
this filter darkens, in the light theme only, any foreground whose contrast with what is behind
it is under ``MIN_CONTRAST``, keeping its hue, until it reaches ``TARGET`` (a reversed chip's fill likewise).  The dark theme and
NO_COLOR are untouched (the filter returns the segments as they are)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter

MIN_CONTRAST = 3.0      # below this a foreground is darkened (WCAG's floor for large or bold text)
TARGET = 4.5            # ... until this (WCAG AA for text)


def _luminance(c: Color) -> float:
    def channel(v: int) -> float:
        v = v / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two opaque colours (1 … 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _truecolor(c: RichColor | None) -> Color | None:
    if c is None or c.triplet is None:         # default / ANSI colours: the terminal's own, left alone
        return None
    return Color(*c.triplet)


@lru_cache(maxsize=4096)
def legible(style: Style, background: Color) -> Style:
    """``style`` with its foreground darkened until it reads against its background (its own,
    else ``background``); reversed (a selected chip), the foreground is the fill and the
    background the letters: the fill is darkened.  Unchanged when it already reads, has no
    truecolor foreground, or sits on a dark background."""
    fg = _truecolor(style.color)
    if fg is None:
        return style
    other = _truecolor(style.bgcolor) or background
    if contrast(fg, other) >= MIN_CONTRAST or _luminance(other) < 0.4:     # only on light backgrounds
        return style
    darker = fg
    for _ in range(20):
        darker = darker.darken(0.05)
        if contrast(darker, other) >= TARGET:
            break
    return style + Style(color=darker.rich_color)


class LightContrast(LineFilter):
    """Applied by the app on every widget (``DriftApp.get_line_filters``); active in light themes."""

    def __init__(self, app: Any) -> None:
        super().__init__()
        self._app = app

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        app = self._app
        if app.no_color or app.current_theme.dark:
            return segments
        bg = Color(background.r, background.g, background.b)
        return [Segment(text, legible(style, bg) if style is not None else None, control)
                for text, style, control in segments]
