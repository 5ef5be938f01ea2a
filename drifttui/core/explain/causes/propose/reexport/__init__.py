"""The origin module exported again, alone, and grafted into the file (issue 30 point 2): the variants tried
(``variants``: the other exporter, other opsets, torch's own decompositions, a re-trace, a script), what a
verified one tells (``story``, ``dynamic_lowering``, ``frozen_trace``, ``aliasing``, ``definitions``,
``witness_attributes``) and how it is grafted where the file holds its inputs (``narrow_graft``,
``held_inputs``)."""
