//! nvidia-smi CSV parsing (placeholder; filled in by the next commit).
