"""Stage 3: the one place pass/fail is decided (``stage.decide``: statuses, origin, notes), with the
layers no module owns (``unattributed``), the output notes (``notes``) and the served model's verdict
(``served``: the served comparison and the batch sweep of core/compose measure, this decides)."""
