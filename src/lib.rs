//! rankscope: forensics for multi-rank LLM inference server start-ups.
pub mod nvsmi;
pub mod snapshot;
