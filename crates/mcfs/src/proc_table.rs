//! The app status detector's uid-indexed process table (FastTrack §4.1):
//! which uid each listed task runs as, and which listed tasks each uid has,
//! so that a change of the foreground tasks maps to apps without scanning
//! `/proc` each time.
//!
//! Invariant: the table holds exactly the tasks of the last `update` whose
//! status could be read. A task's uid (its real uid, from `PROC/PID/status`)
//! is read once, when the task first appears; a task no longer listed drops
//! out, and so is read afresh if it is listed again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// Where the kernel's process tree is mounted.
pub const PROC_ROOT: &str = "/proc";

pub struct ProcTable {
    /// The process tree, a parameter so that tests can give a fake one.
    root: PathBuf,
    uid_of: HashMap<u32, u32>,
    tasks_of: BTreeMap<u32, BTreeSet<u32>>,
}

impl ProcTable {
    pub fn new(root: impl Into<PathBuf>) -> ProcTable {
        ProcTable { root: root.into(), uid_of: HashMap::new(), tasks_of: BTreeMap::new() }
    }

    /// Makes the table hold the tasks in `listed`: reads the uid of each task
    /// it does not know yet and drops the tasks no longer listed. A task
    /// whose status cannot be read (it has exited) is left out.
    pub fn update(&mut self, listed: &BTreeSet<u32>) {
        let gone: Vec<u32> = self.uid_of.keys().filter(|task| !listed.contains(task)).copied().collect();
        for task in gone {
            self.remove(task);
        }
        for &task in listed {
            if self.uid_of.contains_key(&task) {
                continue;
            }
            if let Some(uid) = self.read_uid(task) {
                self.uid_of.insert(task, uid);
                self.tasks_of.entry(uid).or_default().insert(task);
            }
        }
    }

    /// The listed tasks of `uid`, in increasing order.
    pub fn tasks_of(&self, uid: u32) -> impl Iterator<Item = u32> + '_ {
        self.tasks_of.get(&uid).into_iter().flatten().copied()
    }

    /// Each uid with listed tasks, with how many it has, in increasing uid order.
    pub fn task_counts(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.tasks_of.iter().map(|(&uid, tasks)| (uid, tasks.len()))
    }

    fn remove(&mut self, task: u32) {
        let Some(uid) = self.uid_of.remove(&task) else { return };
        if let Some(tasks) = self.tasks_of.get_mut(&uid) {
            tasks.remove(&task);
            if tasks.is_empty() {
                self.tasks_of.remove(&uid);
            }
        }
    }

    fn read_uid(&self, task: u32) -> Option<u32> {
        let path = self.root.join(task.to_string()).join("status");
        match std::fs::read_to_string(&path) {
            Ok(status) => {
                let uid = real_uid(&status);
                if uid.is_none() {
                    tracing::debug!("{}: no Uid line", path.display());
                }
                uid
            }
            Err(e) => {
                tracing::debug!("{}: {e} (task exited?)", path.display());
                None
            }
        }
    }
}

/// The real uid of a `/proc/PID/status` text (`Uid: real effective saved fs`).
fn real_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_ascii_whitespace().next()?.parse().ok()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::path::Path;

    /// A fake `/proc/TASK/status` of a task running as `uid` (effective uid differs, to tell them apart).
    pub fn fake_task(proc_root: &Path, task: u32, uid: u32) {
        let dir = proc_root.join(task.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let status = format!(
            "Name:\tapp\nPid:\t{task}\nUid:\t{uid}\t{}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\n",
            uid + 1
        );
        std::fs::write(dir.join("status"), status).unwrap();
    }

    fn set(tasks: &[u32]) -> BTreeSet<u32> {
        tasks.iter().copied().collect()
    }

    #[test]
    fn the_real_uid_is_read_and_junk_is_none() {
        assert_eq!(real_uid("Name:\tx\nUid:\t10002\t0\t0\t0\n"), Some(10002));
        assert_eq!(real_uid("Uid: 7 8 9 10"), Some(7));
        assert_eq!(real_uid("Name:\tx\n"), None);
        assert_eq!(real_uid("Uid:\n"), None);
        assert_eq!(real_uid("Uid:\t-1\t0\n"), None);
        assert_eq!(real_uid("Uid:\t99999999999\n"), None);
    }

    #[test]
    fn tasks_are_indexed_by_uid_and_unreadable_ones_left_out() {
        let proc_root = tempfile::tempdir().unwrap();
        fake_task(proc_root.path(), 100, 10001);
        fake_task(proc_root.path(), 101, 10001);
        fake_task(proc_root.path(), 200, 1000);
        std::fs::create_dir(proc_root.path().join("300")).unwrap(); // no status file
        let mut table = ProcTable::new(proc_root.path());
        table.update(&set(&[100, 101, 200, 300, 400]));
        assert_eq!(table.tasks_of(10001).collect::<Vec<_>>(), [100, 101]);
        assert_eq!(table.tasks_of(1000).collect::<Vec<_>>(), [200]);
        assert_eq!(table.task_counts().collect::<Vec<_>>(), [(1000, 1), (10001, 2)], "300 and 400 left out");
    }

    #[test]
    fn only_new_tasks_are_read_and_unlisted_ones_drop_out() {
        let proc_root = tempfile::tempdir().unwrap();
        fake_task(proc_root.path(), 100, 10001);
        fake_task(proc_root.path(), 101, 10002);
        let mut table = ProcTable::new(proc_root.path());
        table.update(&set(&[100, 101]));
        // The status of a known task changes: a task that stays listed is not read again.
        fake_task(proc_root.path(), 100, 10009);
        fake_task(proc_root.path(), 102, 10002);
        table.update(&set(&[100, 102]));
        assert_eq!(table.tasks_of(10001).collect::<Vec<_>>(), [100], "a listed task is not read again");
        assert_eq!(table.tasks_of(10002).collect::<Vec<_>>(), [102], "an unlisted task drops out");
        // Unlisted, then listed again: read afresh.
        table.update(&set(&[102]));
        assert_eq!(table.task_counts().collect::<Vec<_>>(), [(10002, 1)], "an emptied uid leaves the index");
        table.update(&set(&[100, 102]));
        assert_eq!(table.tasks_of(10009).collect::<Vec<_>>(), [100]);
        table.update(&BTreeSet::new());
        assert_eq!(table.task_counts().count(), 0);
    }

    #[test]
    fn the_real_proc_gives_our_own_uid() {
        let mut table = ProcTable::new(PROC_ROOT);
        let me = std::process::id();
        table.update(&set(&[me]));
        // SAFETY: getuid has no preconditions.
        assert_eq!(table.tasks_of(unsafe { libc::getuid() }).collect::<Vec<_>>(), [me]);
    }
}
