"""Starter templates for the practice exercises (fetch one with ``qkv-exercise starter NAME``).

Each template defines the functions of one exercise with their docstrings
and a ``raise NotImplementedError`` body for the learner to replace.
"""
