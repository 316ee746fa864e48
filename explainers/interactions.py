"""Friedman's H statistic: the public import path. The code lives in :mod:`explainers.effects.hstat`.

SHAP interaction values are :meth:`explainers.shap.TreeShap.interactions` (and
:meth:`explainers.shap.ExactShap.interactions`).
"""
from .effects.hstat import HStatisticResult, h_statistic

__all__ = ["h_statistic", "HStatisticResult"]
