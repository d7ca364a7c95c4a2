//! rankscope: forensics for multi-rank LLM inference server start-ups.
