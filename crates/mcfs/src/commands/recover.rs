//! `mcfs recover`: replays the journal of an unmounted backing directory so
//! it is a plain, consistent tree again. Holds the backing lock throughout,
//! so it neither runs beside a live daemon nor lets one start meanwhile.

use crate::backing_lock::BackingLock;
use crate::cli::RecoverArgs;
use crate::output::print;
use crate::preflight;
use crate::state_dir::StateDir;

pub fn run(args: RecoverArgs) -> Result<(), String> {
    let backing = preflight::existing_dir("backing directory", &args.backing)?;
    let state = StateDir::open(&backing, false)?;
    let _lock = BackingLock::acquire(&backing, &state)?;
    let backend = preflight::open_backend(&backing)?;
    let report = mcfs_core::journal::recover(&backend)
        .map_err(|e| format!("recovery of {} failed: {}", backing.display(), e))?;
    print(&format!("recovered {}\n{report}\n", backing.display()))
}
