"""Membership inference on a released model (:mod:`.inference`: the loss attack and LiRA, Carlini et al. 2022)."""
