//! Follows the foreground app from a file that lists the foreground tasks,
//! one pid per line (Android's `/dev/cpuset/top-app/tasks`; config
//! `fasttrack.tasks_file`, mount flag `--fg-tasks`): FastTrack's app status
//! detector (§4.1) on a system that publishes its top app this way.
//!
//! Every `POLL_INTERVAL` the file is read; when the set of listed tasks has
//! changed, the process table maps them to uids and the engine is told the
//! choice: the app uid (10000 and up) with most listed tasks, ties to the
//! lowest uid; none when only system uids, or nothing, are listed.
//!
//! Rule for manual settings: the watcher speaks only when the listed tasks
//! change, so `mcfs ctl MNT fg APP` holds until the file changes again.

use crate::polling::PollingThread;
use crate::proc_table::ProcTable;
use mcfs_core::config::FIRST_APP_UID;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The foreground uid among listed `(uid, tasks)` counts: the app uid with
/// most tasks, ties to the lowest uid; none if no app uid is listed.
pub fn choose_foreground(counts: impl IntoIterator<Item = (u32, usize)>) -> Option<u32> {
    counts
        .into_iter()
        .filter(|&(uid, tasks)| uid >= FIRST_APP_UID && tasks > 0)
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(uid, _)| uid)
}

/// The tasks a tasks file lists. Anything that is not a task id (a kernel
/// never writes one, but the file may be a user's) is skipped.
fn parse_tasks(text: &[u8]) -> BTreeSet<u32> {
    text.split(|b| b.is_ascii_whitespace())
        .filter(|token| !token.is_empty())
        .filter_map(|token| std::str::from_utf8(token).ok()?.parse().ok())
        .collect()
}

/// The tasks file and what was last read from it.
pub struct TaskFileFollower {
    path: PathBuf,
    table: ProcTable,
    /// The tasks listed at the last successful read; `None` before the first.
    listed: Option<BTreeSet<u32>>,
    /// The last read failed (reported once, not every poll).
    unreadable: bool,
}

impl TaskFileFollower {
    pub fn new(path: PathBuf, proc_root: PathBuf) -> TaskFileFollower {
        TaskFileFollower { path, table: ProcTable::new(proc_root), listed: None, unreadable: false }
    }

    /// Reads the file; if the listed tasks changed since the last read (the
    /// first read always counts as a change), the foreground uid they give.
    /// An unreadable file changes nothing.
    pub fn poll(&mut self) -> Option<Option<u32>> {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(e) => {
                if !std::mem::replace(&mut self.unreadable, true) {
                    tracing::warn!("foreground tasks file {}: {e}; keeping the foreground app", self.path.display());
                }
                return None;
            }
        };
        if std::mem::replace(&mut self.unreadable, false) {
            tracing::info!("foreground tasks file {} is readable again", self.path.display());
        }
        let listed = parse_tasks(&text);
        if self.listed.as_ref() == Some(&listed) {
            return None;
        }
        self.table.update(&listed);
        self.listed = Some(listed);
        let choice = choose_foreground(self.table.task_counts());
        if let Some(uid) = choice {
            tracing::debug!("foreground uid {uid}, tasks {:?}", self.table.tasks_of(uid).collect::<Vec<_>>());
        }
        Some(choice)
    }
}

/// Checks, before the daemon starts, that the tasks file can be read; the
/// absolute path, since the daemon does not keep the working directory.
pub fn check_tasks_file(path: &Path) -> Result<PathBuf, String> {
    let fail = |e: std::io::Error| format!("foreground tasks file {}: {e}", path.display());
    let absolute = std::path::absolute(path).map_err(fail)?;
    std::fs::read(&absolute).map_err(fail)?;
    Ok(absolute)
}

/// Reads the tasks file once now, reporting its choice before this returns
/// (so the mount serves its first request knowing the foreground app), then
/// follows it on a thread; `report` hears each new choice.
pub fn spawn(
    path: PathBuf,
    proc_root: PathBuf,
    report: impl Fn(Option<u32>) + Send + 'static,
) -> std::io::Result<PollingThread> {
    let mut follower = TaskFileFollower::new(path, proc_root);
    let mut step = move || {
        if let Some(choice) = follower.poll() {
            report(choice);
        }
    };
    step();
    PollingThread::spawn("mcfs-fg-watch", POLL_INTERVAL, step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proc_table::tests::fake_task;
    use std::sync::mpsc;
    use std::time::Instant;

    #[test]
    fn the_app_with_most_tasks_wins_ties_go_to_the_lowest_uid() {
        assert_eq!(choose_foreground([]), None);
        assert_eq!(choose_foreground([(0, 5), (1000, 9), (9999, 1)]), None, "system uids are never foreground");
        assert_eq!(choose_foreground([(1000, 9), (10005, 1)]), Some(10005));
        assert_eq!(choose_foreground([(10001, 2), (10002, 3), (10003, 1)]), Some(10002));
        assert_eq!(choose_foreground([(10007, 2), (10003, 2), (10005, 1)]), Some(10003));
        assert_eq!(choose_foreground([(10003, 2), (10007, 2)]), Some(10003), "order does not matter");
        assert_eq!(choose_foreground([(10003, 0)]), None);
    }

    #[test]
    fn task_lists_parse_leniently() {
        assert_eq!(parse_tasks(b""), BTreeSet::new());
        assert_eq!(parse_tasks(b"12\n7\n12\n"), BTreeSet::from([7, 12]));
        assert_eq!(parse_tasks(b" 3 \r\n\nx\n-4\n5\xff\n99999999999\n8"), BTreeSet::from([3, 8]));
    }

    /// A temp dir with a fake /proc and a tasks file.
    struct Scene {
        dir: tempfile::TempDir,
    }

    impl Scene {
        fn new(tasks: &[(u32, u32)]) -> Scene {
            let scene = Scene { dir: tempfile::tempdir().unwrap() };
            for &(task, uid) in tasks {
                fake_task(&scene.proc_root(), task, uid);
            }
            scene.list(&[]);
            scene
        }
        fn proc_root(&self) -> PathBuf {
            self.dir.path().join("proc")
        }
        fn tasks_file(&self) -> PathBuf {
            self.dir.path().join("tasks")
        }
        /// Replaces the file's contents at once (write, then rename), as the kernel's would change.
        fn list(&self, tasks: &[u32]) {
            let text: String = tasks.iter().map(|t| format!("{t}\n")).collect();
            let next = self.dir.path().join("tasks.next");
            std::fs::write(&next, text).unwrap();
            std::fs::rename(next, self.tasks_file()).unwrap();
        }
        fn follower(&self) -> TaskFileFollower {
            TaskFileFollower::new(self.tasks_file(), self.proc_root())
        }
    }

    #[test]
    fn the_follower_speaks_only_when_the_listed_tasks_change() {
        let scene = Scene::new(&[(100, 10001), (101, 10001), (200, 10002), (300, 1000)]);
        let mut follower = scene.follower();
        assert_eq!(follower.poll(), Some(None), "the first read counts as a change");
        assert_eq!(follower.poll(), None);
        scene.list(&[200, 300]);
        assert_eq!(follower.poll(), Some(Some(10002)));
        scene.list(&[300, 200]);
        assert_eq!(follower.poll(), None, "the same tasks in another order are no change");
        scene.list(&[100, 101, 200]);
        assert_eq!(follower.poll(), Some(Some(10001)));
        scene.list(&[100, 200]);
        assert_eq!(follower.poll(), Some(Some(10001)), "a change that keeps the choice is still told");
        scene.list(&[300]);
        assert_eq!(follower.poll(), Some(None), "only a system uid: no foreground app");
        std::fs::remove_file(scene.tasks_file()).unwrap();
        assert_eq!(follower.poll(), None, "an unreadable file changes nothing");
        scene.list(&[300]);
        assert_eq!(follower.poll(), None, "readable again with the same tasks: no change");
        scene.list(&[300, 999]);
        assert_eq!(follower.poll(), Some(None), "a task without a status (exited) counts for nobody");
    }

    #[test]
    fn a_missing_tasks_file_is_refused_before_mounting() {
        let scene = Scene::new(&[]);
        assert!(check_tasks_file(&scene.tasks_file()).unwrap().is_absolute());
        let missing = scene.dir.path().join("absent");
        let err = check_tasks_file(&missing).unwrap_err();
        assert!(err.contains(&missing.display().to_string()) && err.contains("No such file"), "{err}");
    }

    #[test]
    fn the_watcher_follows_the_file_until_stopped() {
        let scene = Scene::new(&[(100, 10001), (200, 10002), (201, 10002)]);
        scene.list(&[100]);
        let (tx, rx) = mpsc::channel();
        let watcher = spawn(scene.tasks_file(), scene.proc_root(), move |choice| {
            let _ = tx.send(choice);
        })
        .unwrap();
        assert_eq!(rx.try_recv(), Ok(Some(10001)), "the first choice is told before spawn returns");
        scene.list(&[100, 200, 201]);
        // A guard against a hang, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(30);
        let next = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        assert_eq!(next, Ok(Some(10002)));
        scene.list(&[]);
        assert_eq!(rx.recv_timeout(deadline.saturating_duration_since(Instant::now())), Ok(None));
        watcher.stop();
        assert!(rx.try_recv().is_err(), "nothing more was told");
    }
}
