"""Feature effects: how the prediction moves with one or two features.

- :mod:`.pdp`: partial dependence and ICE, 1D and 2D (brute force, the exact tree
  walk of :mod:`._tree_kernels`, scikit-learn's recursion, and the network shortcut
  of :mod:`._layers`);
- :mod:`.ale`: accumulated local effects, first and second order;
- :mod:`.hstat`: Friedman's H statistic of interaction, from partial dependence.

``explainers.pdp``, ``explainers.ale`` and ``explainers.interactions`` stay the public import paths.
"""
from .ale import AleResult, ale
from .hstat import HStatisticResult, h_statistic
from .pdp import PartialDependenceResult, partial_dependence

__all__ = ["partial_dependence", "PartialDependenceResult", "ale", "AleResult", "h_statistic", "HStatisticResult"]
