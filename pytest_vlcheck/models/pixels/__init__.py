"""Pixel operations a backend's preprocessing is split into: the host half (compact uint8
batches) and the device half (JPEG decode and transform on the accelerator)."""
