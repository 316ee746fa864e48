"""Glassbox explainers: model-agnostic and tree-exact explanations of fitted models.

Pure computation (numpy, pandas, scikit-learn, joblib, numba): nothing here
imports streamlit or plotly, so every function can be used from a notebook,
a batch job or the dashboard alike.
"""
from .errors import (
    ExplainerError,
    InvalidDataError,
    InvalidFeatureError,
    InvalidModelError,
    InvalidParameterError,
    UnsafeModelError,
)
from .model import ModelAdapter
from .io import Dataset, fingerprint, load_data, load_model

__all__ = [
    "ModelAdapter",
    "load_model",
    "load_data",
    "Dataset",
    "fingerprint",
    "ExplainerError",
    "InvalidDataError",
    "InvalidFeatureError",
    "InvalidModelError",
    "InvalidParameterError",
    "UnsafeModelError",
]
