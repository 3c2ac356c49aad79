"""Per-row decoding for the transformers backend: greedy or sampled rows under a grammar
(`row_control`), and JSON-schema rows closed within their token budget (`forcing`, `closing`,
`schema_walk`).
"""
