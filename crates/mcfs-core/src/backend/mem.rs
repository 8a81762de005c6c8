//! MemBackend (being written).
pub struct MemBackend;
