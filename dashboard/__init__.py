"""Glassbox dashboard: Streamlit pages over :mod:`explainers`.

From a notebook or a script, ``show(model, X, y)`` serves the dashboard on that model
(see :mod:`dashboard.notebook`); from a terminal, ``glassbox serve`` (:mod:`dashboard.cli`).
"""
__version__ = "0.1.0"  # the one place of the version: pyproject.toml reads it from here

from .notebook import Dashboard, ShowError, show  # noqa: E402 - standard library only at import

__all__ = ["show", "Dashboard", "ShowError", "__version__"]
