//! `mcfs recover`: replays the journal of an unmounted backing directory so
//! it is a plain, consistent tree again. Holds the backing lock throughout,
//! so it neither runs beside a live daemon nor lets one start meanwhile.

use crate::backing_lock::BackingLock;
use crate::cli::RecoverArgs;
use crate::preflight;

pub fn run(args: RecoverArgs) -> Result<(), String> {
    let backing = preflight::existing_dir("backing directory", &args.backing)?;
    let state = backing.join(mcfs_core::STATE_DIR);
    if !state.is_dir() {
        return Err(format!(
            "backing directory {}: no {} directory; not an mcfs backing store",
            backing.display(),
            mcfs_core::STATE_DIR
        ));
    }
    let _lock = BackingLock::acquire(&backing)?;
    let backend = preflight::open_backend(&backing)?;
    let report = mcfs_core::journal::recover(&backend)
        .map_err(|e| format!("recovery of {} failed: {}", backing.display(), e))?;
    println!("recovered {}", backing.display());
    println!("{report}");
    Ok(())
}
