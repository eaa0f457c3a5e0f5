"""The scorer-aware image feed: the pipeline that loads a batch's images (threads, worker
processes), the live image store, and which images go to the accelerator to decode."""
