"""ONNX Runtime's graph transformers: which ones changed a graph, and sessions with some disabled.

ORT names every transformer it applies in its verbose log ("GraphTransformer <Name> modified: 1
with status: OK", graph_transformer.cc); ``modified_transformers`` reads that log for one session
build (the log goes to a temporary file, never to the terminal), so a pass bisect searches only
the transformers that really rewrote this graph, in ORT's own order, whatever the ORT version.
The rewrite rules inside the rule-based transformers (``Level1_RuleBasedTransformer``) are not
logged one by one: ``RULES`` lists ORT 1.32's (graph_transformer_utils.cc, GenerateRewriteRules);
``InferenceSession(..., disabled_optimizers=[...])`` takes transformer and rule names alike and
ignores a name it does not know, so a rule missing from another version is simply never found.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from typing import Any, Iterable, Sequence

from drifttui.core.runtime import sessions

RULE_BASED = "RuleBasedTransformer"      # Level1_RuleBasedTransformer, Level2_RuleBasedTransformer
# ORT 1.32's level-1 rewrite rules (GenerateRewriteRules), in its order
RULES = ("EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout", "ExpandElimination",
         "CastElimination", "PreShapeNodeElimination", "NoopElimination", "DivMulFusion", "FuseReluClip",
         "GemmSumFusion", "GemmTransposeFusion", "NotWhereFusion", "ConvAddFusion", "ConvMulFusion", "ConvBNFusion",
         "ClipQuantFusion", "ReluQuantFusion", "PadFusion", "MatmulBNFusion", "LabelEncoderFusion")
_MODIFIED = re.compile(r"GraphTransformer (\S+) modified: 1 ")
_LOG_LOCK = threading.Lock()            # one redirected stderr at a time


def session(payload: Any, level: str, disabled: Iterable[str] = (), deterministic: bool = True,
            optimized_path: Any = None, verbose: bool = False) -> Any:
    """An InferenceSession on ``payload`` (bytes or a path) at ``level`` with ``disabled`` off."""
    import onnxruntime as ort

    so = sessions.session_options(level, deterministic, optimized_path)
    if verbose:
        so.log_severity_level = 0
        so.log_verbosity_level = 1
    return ort.InferenceSession(payload, so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=sorted(set(disabled)))


def modified_transformers(payload: Any, level: str, disabled: Iterable[str] = ()) -> list[str]:
    """The transformers that modified the graph when a session on ``payload`` was built at
    ``level`` (ORT's order, each name once), read from ORT's verbose log."""
    text = _captured_stderr(lambda: session(payload, level, disabled, verbose=True))
    return list(dict.fromkeys(_MODIFIED.findall(text)))


def _captured_stderr(fn: Any) -> str:
    """What ``fn`` writes to file descriptor 2 (ORT's C++ logger), kept off the terminal."""
    with _LOG_LOCK, tempfile.TemporaryFile(mode="w+b") as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


def expand_rules(names: Sequence[str]) -> list[str]:
    """``names`` with each rule-based transformer replaced by the rewrite rules it runs."""
    out: list[str] = []
    for n in names:
        out += list(RULES) if n.endswith(RULE_BASED) and n.startswith("Level1") else [n]
    return list(dict.fromkeys(out))
