//! Text for people: one module per document, sharing the table and wrapping helpers of
//! `render`.

pub mod breakdown;
pub mod capacity;
pub mod cause;
pub mod diff;
pub mod held;
pub mod mem;
pub mod notes;
pub mod outcome;
pub mod remedy;
pub mod smi;
pub mod summary;
pub mod time;
pub mod values;
pub mod verdict;
pub mod watch;
