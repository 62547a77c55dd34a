"""d_chi-privacy (Qu et al. 2021): token-embedding inversion (:mod:`.inversion`) and the analyses that guide the
choice of eta (:mod:`.analysis`)."""
