"""A trained model as a folder: writing it (:mod:`.export`: weights, ``privnlu.json``, the model card of
:mod:`.card`), and reading it back to answer queries (:mod:`.predict`: :func:`~.predict.load`, streamed inputs of
:mod:`.predict_inputs`, received guarantees verified by :mod:`.received`). ``privnlu predict`` and
:func:`privnlu.predict` call it."""
