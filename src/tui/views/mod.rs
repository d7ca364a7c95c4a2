//! The views, one file each, drawn into the area `ui` gives them: they read `App` and
//! write the frame, and compute nothing that outlives the frame.

pub(crate) mod breakdown;
pub(crate) mod diff;
pub(crate) mod events;
pub(crate) mod help;
pub(crate) mod loading;
pub(crate) mod memory;
pub(crate) mod timeline;
