//! Analysis: pure functions over run models. No I/O here.

pub mod align;
pub mod attribute;
pub mod breakdown;
pub mod capacity;
pub mod cause;
pub(crate) mod clock;
pub mod diff;
pub mod early;
pub mod env;
pub mod held;
pub mod lanes;
pub mod outcome;
pub mod remedy;
pub mod smi;
pub mod timing;
