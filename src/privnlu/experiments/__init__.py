"""Registered paper recipes (:mod:`.registry`), one module per paper: each recipe reproduces one table or figure
(or an experiment that extends a paper's method) through the engines in :mod:`privnlu.training`,
:mod:`privnlu.attacks` and :mod:`privnlu.audit`; ``privnlu reproduce`` runs them."""
