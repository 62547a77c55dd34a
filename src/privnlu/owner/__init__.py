"""The data owner's side: privatizing data before it leaves the owner (:mod:`.release`: a task split's encodings
and key under a per-batch scheme, a text file privatized once under a d_chi scheme, each recorded in the privacy
ledger). ``privnlu release`` and :func:`privnlu.release` call it."""
