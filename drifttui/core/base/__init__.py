"""The engine's vocabulary, read by every stage and importing none: element types (``dtypes``), the
tolerance and precision-budget rules (``tolerance``), tolerance-free statistics (``metrics``), byte
sizes (``units``) and cancellation/progress (``progress``)."""
