//! What a crash now would leave in the backing store: its state with every
//! waiting transaction recovered, on a copy.

use mcfs_core::backend::Backend;
use mcfs_core::MemBackend;
use std::path::Path;

/// The bytes of `path` after a crash now (None: no such file).
pub fn durable_contents(backend: &MemBackend, path: &str) -> Option<Vec<u8>> {
    let backend = mcfs_core::journal::recovered_copy(backend).ok()?;
    let size = backend.stat(Path::new(path)).ok()?.size as usize;
    let mut buf = vec![0; size];
    let n = backend.read_at(Path::new(path), 0, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}
