//! Ops the backing store refused for good when a checkpoint applied them
//! (the journal skips them: `journal::UnappliedOp`), traced back to the app
//! and the inode whose log entry produced them. Each one is logged, counted
//! for `mcfs stat`, and reported to the owning app once, at its next fsync
//! of that file, as Linux reports a writeback error. The engine's
//! live state is left as the app made it: it is what the app was told, and
//! the error is how it learns that the backing store does not have it.
//!
//! Invariant: an op's origin is recorded before its transaction is
//! committed and kept until the transaction is applied, however many
//! attempts that takes, so every skipped op finds its owner.

use crate::journal::UnappliedOp;
use crate::stats::UnappliedOpStat;
use crate::types::{Errno, Ino};
use crate::vct::{AppId, ClosedEntry};
use std::collections::{HashMap, VecDeque};

/// Skipped ops `mcfs stat` lists (the newest).
const RECENT: usize = 8;
/// Errors owed at most: an app that never syncs the file again (or whose
/// file is gone) keeps its entry, so the map is bounded; past this, skipped
/// ops are still logged and counted, but not reported at fsync.
const MAX_OWED: usize = 4096;

/// Consecutive journal ops `first..=last` compiled from entries of one
/// (app, inode).
struct Run {
    first: u64,
    last: u64,
    app: AppId,
    ino: Ino,
}

/// Where each op of one transaction came from.
#[derive(Default)]
pub struct OpOrigins {
    runs: Vec<Run>,
}

impl OpOrigins {
    /// Op `index` (or part of it: a coalesced write) came from `entry` of `app`.
    pub fn note(&mut self, index: u64, app: AppId, entry: &ClosedEntry) {
        let ino = entry.ino();
        match self.runs.last_mut() {
            Some(run) if run.app == app && run.ino == ino && index <= run.last + 1 => run.last = run.last.max(index),
            _ => self.runs.push(Run { first: index, last: index, app, ino }),
        }
    }

    /// The (app, inode) pairs op `index` came from.
    fn of(&self, index: u64) -> impl Iterator<Item = (AppId, Ino)> + '_ {
        // Runs are in op order; a coalesced op may close one run and open the next.
        let from = self.runs.partition_point(|r| r.last < index);
        self.runs[from..].iter().take_while(move |r| r.first <= index).map(|r| (r.app, r.ino))
    }
}

/// The engine's record of skipped ops.
#[derive(Default)]
pub struct Refused {
    /// Origins of the ops of the transaction in the journal.
    pub origins: OpOrigins,
    /// Errors owed to (app, inode), reported once.
    owed: HashMap<(AppId, Ino), Errno>,
    /// Ops skipped since the mount.
    pub count: u64,
    pub recent: VecDeque<UnappliedOpStat>,
}

impl Refused {
    /// The transaction `seq` is applied and skipped `unapplied`: logs each
    /// op with its owners (`app_name` names them) and owes them the errno.
    pub fn applied(&mut self, seq: u64, unapplied: &[UnappliedOp], app_name: &dyn Fn(AppId) -> String) {
        let origins = std::mem::take(&mut self.origins);
        for op in unapplied {
            let owners: Vec<(AppId, Ino)> = origins.of(op.index).collect();
            let apps: Vec<String> = owners.iter().map(|(app, _)| app_name(*app)).collect();
            tracing::warn!(
                "checkpoint {seq}: the backing store cannot hold {op}; skipped, the rest is committed; \
                 {} gets the error at its next fsync of the file",
                if apps.is_empty() { "no app".to_string() } else { apps.join(", ") }
            );
            for owner in owners {
                if self.owed.len() < MAX_OWED {
                    self.owed.entry(owner).or_insert(Errno(op.errno));
                }
            }
            self.count += 1;
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            let error = std::io::Error::from_raw_os_error(op.errno).to_string();
            let app = apps.first().cloned().unwrap_or_default();
            self.recent.push_back(UnappliedOpStat { app, op: op.op.clone(), errno: op.errno, error });
        }
    }

    /// The error owed to `app` for `ino`, once.
    pub fn take(&mut self, app: AppId, ino: Ino) -> Option<Errno> {
        self.owed.remove(&(app, ino))
    }

    /// Some error is owed to some app (an fsync need not look up its app).
    pub fn owes_any(&self) -> bool {
        !self.owed.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vct::LogEntry;

    fn write(ino: Ino) -> ClosedEntry {
        ClosedEntry::Other(LogEntry::SetLen { ino, size: 0 })
    }

    #[test]
    fn a_coalesced_op_belongs_to_every_entry_it_took() {
        let mut origins = OpOrigins::default();
        origins.note(0, 0, &write(5));
        origins.note(1, 0, &write(5));
        origins.note(1, 1, &write(5)); // app 1's page joined op 1
        origins.note(2, 1, &write(5));
        origins.note(2, 1, &write(6));
        let of = |i| origins.of(i).collect::<Vec<_>>();
        assert_eq!(of(0), [(0, 5)]);
        assert_eq!(of(1), [(0, 5), (1, 5)]);
        assert_eq!(of(2), [(1, 5), (1, 6)]);
        assert_eq!(of(3), []);
    }

    #[test]
    fn an_owed_error_is_reported_once_to_its_owner() {
        let mut refused = Refused::default();
        refused.origins.note(0, 0, &write(5));
        refused.origins.note(1, 1, &write(6));
        let unapplied = [UnappliedOp { seq: 1, index: 1, op: "truncate f to 9".into(), errno: libc::EFBIG }];
        refused.applied(3, &unapplied, &|app| format!("app{app}"));
        assert_eq!(refused.take(0, 5), None, "app 0's op went through");
        assert_eq!(refused.take(1, 6), Some(Errno::EFBIG));
        assert_eq!(refused.take(1, 6), None, "reported once");
        assert_eq!((refused.count, refused.recent[0].app.as_str()), (1, "app1"));
    }
}
