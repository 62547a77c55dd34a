"""Attacks on released representations: similarity search (Huang et al. 2020, section 4.4), representation
inversion (appendix C.3), the five leakage metrics and their auditor."""
