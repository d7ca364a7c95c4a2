//! rankscope: forensics for multi-rank LLM inference server start-ups.
//!
//! Data flows one way: `source` (bytes in) → `scan` with `grammar` (events) → `model`
//! (ranks, phases, failures) → `analysis` (alignment, diff) → `render` (text, JSON, TUI).
//! See docs/architecture.md.

pub mod analysis;
pub mod cli;
pub mod config;
pub mod event;
pub mod export;
pub mod grammar;
pub mod load;
pub mod model;
pub mod node;
pub mod nvsmi;
pub mod pyrepr;
pub mod render;
pub mod report;
pub mod scan;
pub mod snapshot;
pub mod source;
pub mod text;
pub mod tui;
pub mod units;
