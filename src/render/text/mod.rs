//! Text for people: one module per document, sharing the table and wrapping helpers of
//! `render`.

pub(crate) mod breakdown;
pub mod capacity;
pub(crate) mod cause;
pub mod diff;
pub(crate) mod held;
pub mod mem;
pub mod notes;
pub mod outcome;
pub(crate) mod remedy;
pub(crate) mod smi;
pub mod summary;
pub(crate) mod time;
pub(crate) mod values;
pub(crate) mod verdict;
pub mod watch;
