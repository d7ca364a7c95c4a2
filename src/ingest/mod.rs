//! Reading: bytes in (files, directories, compressed streams, stdin), lines decoded and
//! cleaned, events matched by the grammars, nvidia-smi tables parsed, and the run's inputs
//! gathered. Nothing here interprets what the events mean; that is `model` and `analysis`.

pub mod follow;
#[cfg(target_os = "linux")]
pub(crate) mod mapped_file;
pub mod nvsmi;
pub mod replay;
pub mod scan;
pub mod source;
pub mod stream;
