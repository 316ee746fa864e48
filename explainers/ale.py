"""Accumulated local effects: the public import path. The code lives in :mod:`explainers.effects`."""
from .effects.ale import AleResult, ale

__all__ = ["ale", "AleResult"]
