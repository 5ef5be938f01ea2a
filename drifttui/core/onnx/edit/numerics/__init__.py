"""Graph edits of precision: float64 sums (``accumulate64``), float32 arithmetic with explicit roundings
(``opmath``), a widening Cast moved first (``cast_first``), a region in float64 (``origin64``) and the whole graph
in float64 (``widen``)."""
