"""Inference profile: requests and batches of inference servers."""
