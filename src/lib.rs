//! rankscope: forensics for multi-rank LLM inference server start-ups.
//!
//! Data flows one way: `source` (bytes in) → `scan` with `grammar` (events) → `model`
//! (ranks, phases, failures) → `analysis` (alignment, diff) → `render` (text, JSON, TUI).
//! See docs/architecture.md.

pub mod analysis;
pub mod base;
pub mod export;
pub mod grammar;
pub mod ingest;
pub mod model;
pub mod render;
pub mod report;
pub mod session;
pub mod snapshot;
pub mod tui;
