"""The DAGER-class span inversion (Petrov et al. 2024): exact sentences from one client message.

* :mod:`.span`: layer 1, per-position token candidates from the gradient span;
* :mod:`.search`: layer 2, whole sentences from the candidates;
* :mod:`.attack`: the attack on a captured message;
* :mod:`.metrics`: the auditor's ROUGE scoring;
* :mod:`.measure`, :mod:`.secagg`: the attack measured on privnlu's own client messages, plain or aggregated.
"""
