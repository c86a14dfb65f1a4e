"""Embedders: the protocol, an endpoint embedder and the offline local one."""
