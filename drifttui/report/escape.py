"""One escaping rule per medium for text that comes from a model, an ONNX file or a report.

Module, class, ONNX value/node/op-domain and output names, the paths in a saved report, and
every engine sentence that quotes them are untrusted text: a model can name a module
``"\\x1b]52;c;...\\x07"`` (an OSC 52 clipboard write) or ``"</details><script>"``. drifttui's
own words never carry a control character, so each front end escapes a whole sentence at the
point where it meets its medium; the JSON report keeps every name exact.

- :func:`terminal`: control characters (C0, DEL, C1) and the bidirectional overrides shown
  visibly as ``\\x1b`` / ``\\u202e`` (CLI text, one-line errors, the TUI, the clipboard).
- :func:`plain`: the same for a Rich/Textual ``Text`` (never parsed as markup).
- :func:`markdown_text`, :func:`markdown_code`: GitHub-flavoured Markdown (step summaries and PR
  comments render it as HTML): HTML and Markdown syntax escaped, ``|`` and line breaks never
  split a table row.
- :func:`html_text`: the HTML page (``--html``): entities for ``& < > " '``, controls visible.
- :func:`xml`: characters XML 1.0 does not allow shown visibly (ElementTree escapes ``&<>"``).
- :func:`github_data`, :func:`github_property`: a GitHub Actions workflow command's message and
  properties (``%25 %0D %0A``; ``%3A %2C`` in properties), as GitHub documents.
- :class:`CommandGuard`: a text stream where no line can start (after blanks) with ``::`` unless
  drifttui writes it as its own workflow command (:func:`write_command`).
"""
from __future__ import annotations

import re
from typing import Any, TextIO

from drifttui.untrusted import CONTROL, terminal, visible_char  # noqa: F401  (terminal: re-exported, the rule errors.py shares)


def terminal_data(value: Any, keep: tuple[str, ...] = ("config",)) -> Any:
    """A display copy of ``value`` (a Result, a Step, a list, a dict ...) with every string in it,
    dict keys included, :func:`terminal`-escaped; what holds no control character is returned
    as is. The dataclass fields named in ``keep`` stay exact (a run's Config is rerun, not shown).
    Front ends render the copy and keep the original for the engine and for saving."""
    import dataclasses

    if isinstance(value, str):
        return terminal(value) if CONTROL.search(value) else value
    if isinstance(value, list):
        items = [terminal_data(v, keep) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, tuple):
        items = [terminal_data(v, keep) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, dict):
        pairs = [(terminal_data(k, keep), terminal_data(v, keep)) for k, v in value.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items()))
        return value if same else dict(pairs)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.name in keep or not f.init:
                continue
            old = getattr(value, f.name)
            new = terminal_data(old, keep)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def plain(text: Any, style: str = "", **kwargs: Any):
    """A Rich ``Text`` of ``text`` escaped for a terminal: never interpreted as markup."""
    from rich.text import Text

    return Text(terminal(text), style=style, **kwargs)


# --- Markdown (GitHub-flavoured) ---------------------------------------------------------------
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "|": "&#124;", "@": "&#64;"}
_MD_PUNCT = set("\\`*_{}[]#!~:")


def markdown_text(text: Any) -> str:
    """Untrusted text in Markdown prose or a table cell: shown as typed, never as HTML or syntax.

    HTML special characters and ``|`` become entities (a pipe never splits a table row, ``@``
    never mentions anybody), Markdown punctuation is backslash-escaped (no emphasis, link,
    image or heading), control characters and line breaks are shown visibly."""
    out = []
    for ch in terminal(text):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def markdown_code(text: Any, in_table: bool = True) -> str:
    """Untrusted text as a Markdown code span (shown literally: no HTML inside a code span).

    A backtick would end the span: the span is fenced with more backticks than the text holds.
    In a table, ``|`` is escaped as ``\\|`` (GFM reads that as a pipe, even inside a code span)."""
    s = terminal(text)
    if in_table:
        s = s.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# --- XML 1.0 -------------------------------------------------------------------------------
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
                            "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def html_text(text: Any) -> str:
    """Untrusted text in an HTML page (text or a quoted attribute, SVG included): ``& < > " '``
    as entities, control characters shown visibly (report/html.py)."""
    import html

    return html.escape(terminal(text), quote=True)


def xml(text: Any) -> str:
    """Text for an XML 1.0 element or attribute: characters XML forbids (and the other controls)
    shown visibly; tab and line breaks are kept (ElementTree escapes ``&<>"`` itself)."""
    s = text if isinstance(text, str) else str(text)
    return _XML_FORBIDDEN.sub(visible_char, s)


# --- GitHub Actions workflow commands --------------------------------------------------------
def github_data(text: Any) -> str:
    """A workflow command's message: ``%``, CR and LF escaped as GitHub documents."""
    s = terminal(text, keep_newlines=True)
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: Any) -> str:
    """A workflow command's property value (``title=``, ``file=``): also ``:`` and ``,``."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def _starts_command(line: str) -> bool:
    return line.lstrip().startswith("::")


def guard_line(line: str) -> str:
    """A printed line that would start (after blanks) with ``::`` gets a visible ``\\`` before
    the colons: GitHub's runner then never reads it as a workflow command."""
    if not _starts_command(line):
        return line
    blanks = len(line) - len(line.lstrip())
    return line[:blanks] + "\\" + line[blanks:]


class CommandGuard:
    """A text stream wrapper: every line written through it is :func:`guard_line`'d.

    GitHub's runner reads a line as a command when, after leading blanks, it starts with
    ``::``; lines end at ``\\n`` or ``\\r``. A partial line is held only while it could still
    become one (blanks and colons so far), so progress lines that end in ``\\r`` still show."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._line = ""           # the current line, not written yet (blanks and colons only)
        self._decided = False     # the current line's start is written: the rest passes

    def write(self, text: str) -> int:
        out = []
        for piece in re.split(r"([\r\n])", text):
            if piece in ("\r", "\n"):
                out.append(guard_line(self._line) + piece if not self._decided else piece)
                self._line, self._decided = "", False
            elif piece:
                if self._decided:
                    out.append(piece)
                    continue
                self._line += piece
                head = self._line.lstrip()
                if (head and head[0] != ":") or len(head) >= 2:
                    out.append(guard_line(self._line))
                    self._line, self._decided = "", True
        if out:
            self.stream.write("".join(out))
        return len(text)

    def write_command(self, line: str) -> None:
        """drifttui's own workflow command (already escaped), on a line of its own."""
        self.flush_pending()
        self.stream.write(line + "\n")

    def flush_pending(self) -> None:
        if self._line:
            self.stream.write(guard_line(self._line))
            self._line, self._decided = "", True

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:      # isatty, fileno, encoding, buffer ...
        return getattr(self.stream, name)


def write_command(stream: TextIO, line: str) -> None:
    """Write drifttui's own workflow command line, past a :class:`CommandGuard` if there is one."""
    if isinstance(stream, CommandGuard):
        stream.write_command(line)
    else:
        stream.write(line + "\n")
