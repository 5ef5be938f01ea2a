"""Counterfactuals of precision: the origin computed as torch computes it, in the file (issue 30 point 2).

Each proposes a patch that changes how the origin's numbers are computed, never what: float64 sums
(``accumulate64``), float32 arithmetic with torch's roundings (``opmath``, ``decisive_rounding``), the cast
before the op (``cast_first``), the whole origin in float64 (``origin64``), torch's own float32 rounding of an
ill-conditioned input (``conditioning``), and the stories of a reduced-precision file: a precision loss
(``precision_loss``) and an int8 kernel that saturates (``saturation_cause``)."""
