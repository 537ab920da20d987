"""Benchmarks against PyTorch (speed.py) and a per-op profile of a training step (profile_step.py)."""
