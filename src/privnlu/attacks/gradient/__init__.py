"""Attacks on shared gradients: gradient matching (DLG), the embedding-gradient leak, sentence recovery, the
DAGER-class span inversion (:mod:`.dager`) and the attacks on a captured Flower exchange (:mod:`.wire`)."""
