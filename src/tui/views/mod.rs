//! The views, one file each, drawn into the area `ui` gives them: they read `App` and
//! write the frame, and compute nothing that outlives the frame.

pub mod breakdown;
pub mod diff;
pub mod events;
pub mod help;
pub mod loading;
pub mod memory;
pub mod timeline;
