"""A reduced-precision file's fixes on a copy: nodes kept in float32 (``float32``; QOperator nodes:
``qoperator``), int8 weights re-quantized to 7 bits (``reduce_range``), and a keep-list in each converter's words
(``converter_forms``)."""
