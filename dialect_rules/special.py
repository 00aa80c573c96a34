"""Transcendental and special scalar functions: exp/log family, trig, erf, gamma family."""

from __future__ import annotations
