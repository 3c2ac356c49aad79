"""Prefix sharing for the transformers backend: the images and prompt text that several
requests share run once (`units`, `runner`), their KV rows and vision-tower outputs are kept
across calls (`kv_store`, `kv_run`, `vision_cache`), and on CPU the suffix rows read a shared
prefix in place (`shared_attention`). docs/performance.md says why each step pays.
"""
