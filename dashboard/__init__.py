"""Glassbox dashboard: Streamlit pages over :mod:`explainers`."""
