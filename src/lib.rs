//! rankscope: forensics for multi-rank LLM inference server start-ups.
pub mod config;
pub mod pyrepr;
