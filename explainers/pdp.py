"""Partial dependence and ICE: the public import path. The code lives in :mod:`explainers.effects`."""
from .effects.pdp import PartialDependenceResult, partial_dependence

__all__ = ["partial_dependence", "PartialDependenceResult"]
