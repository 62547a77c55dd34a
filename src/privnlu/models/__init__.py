"""Models: offline encoders, pooled sentence representations, cached features and heads."""

from .encoder import POOLINGS, SentenceEncoder, config_summary, default_model_path, load_encoder
from .features import FeatureCache, extract_features
from .heads import MLPHead

__all__ = [
    "POOLINGS", "FeatureCache", "MLPHead", "SentenceEncoder", "config_summary", "default_model_path",
    "extract_features", "load_encoder",
]
