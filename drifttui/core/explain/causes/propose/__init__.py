"""What could fix it: every proposer's candidate patches, assembled (``assemble``) and ordered within a fixed
budget (``patch_budget``): graph edits of the origin's nodes (``edits/``), counterfactuals of precision
(``numerics/``) and re-exports of the origin module (``reexport/``); what a verified patch really changed
(``ablation``), two mechanisms at one origin (``residual``), the other calls of the origin's class (``siblings``)
and the drifts no graph edit can remove (``nopatch``)."""
