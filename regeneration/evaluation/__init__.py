"""The paper's evaluation of text-to-image models by regeneration: `benchmark` runs several models
over one reference folder into the Table-1 layout (CLIP %, DINO %, MLLM ratings), with image grids
and per-round progress; `compare` scores two folders of images paired by file stem, one row per pair.
"""
