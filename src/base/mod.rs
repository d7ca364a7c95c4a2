//! What every layer speaks: the event vocabulary (ranks, phases, failure kinds, event
//! kinds), log text made safe for a terminal, and quantities with their units. Imports
//! nothing else of the crate.

pub mod event;
pub mod fields;
pub(crate) mod interned;
pub mod name;
pub mod pool;
pub(crate) mod rank;
pub mod text;
pub mod units;
