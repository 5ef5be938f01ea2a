"""Stage 3: the one place pass/fail is decided (``stage.decide``: statuses, origin, notes), with the
layers no module owns (``unattributed``) and the output notes (``notes``)."""
