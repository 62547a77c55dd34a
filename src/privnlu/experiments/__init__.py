"""Experiments: the shared pipeline and one recipe module per paper."""
