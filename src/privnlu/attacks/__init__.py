"""Attacks on what privnlu's mechanisms share.

Each attack receives only what its threat model grants (visible in its signature).
:mod:`.gradient_matching`: DLG on a client's shared gradient (TextHide Algorithm 3).
"""
