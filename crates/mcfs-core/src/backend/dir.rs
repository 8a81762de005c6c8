//! DirBackend (being written).
pub struct DirBackend;
