"""Benchmarks of attn against its peers, and the peers themselves (peers/)."""
