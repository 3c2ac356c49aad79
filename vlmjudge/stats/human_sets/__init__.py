"""Readers for public human-judgment sets, one module a set, each giving the same row shape.

A row is a dict with `id`, `prompt`, `image` (the path inside the set's download), `human` (one
float, higher is better) and, where the set has them, `raters` (each person's score), `system`
(the generator) and `prompt_id` (to pass as `groups` so a prompt's images resample together).
Nothing is downloaded here: point a reader at the file the set's page lets you fetch.
"""
