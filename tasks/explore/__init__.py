"""EXPLORE-Bench construction stages."""
