"""Graph edits of the origin's own nodes, one family per drift class: ``candidates`` (attributes, shapes,
resize modes, normalisation, pooling), ``weights`` and ``constants`` (values against torch's), ``rewrites``
(exporter mistranslations with a graph edit), and the generic lowerings that need no catalogue entry:
singular points (``singular``), NaN that torch propagates (``nan_select``, ``nan_grid``), exact integer powers
(``int_pow``), torch's quantisation rounding (``quantize_torch``), torch's eager fast paths (``fast_path``) and
where a Resize samples (``resize_map``)."""
