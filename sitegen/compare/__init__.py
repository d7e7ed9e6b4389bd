"""Comparing builds over time: the regression gate (:mod:`sitegen.compare.gate`)."""
