//! The seeded workload generator: three apps, each mostly working in its own
//! `app<j>/` (as MobiFS assumes) and now and then in `shared/`, with the
//! patterns crash bugs hide behind — writes at any offset (page-crossing,
//! whole pages, sparse), truncates down and up, punched holes and zeroed
//! ranges (partial pages, whole pages, past the end), write-temp-then-rename
//! over an existing file, `O_TMPFILE` files written then linked into place
//! or closed unnamed, unlink and re-create of one name, files unlinked
//! while open, hard links, symlinks, chmod, extended attributes, renames and
//! exchanges of directories, fsync, checkpoints, clock ticks and battery
//! changes (low battery puts every app in sync mode). Now and then a step
//! the backing store's limits forbid (values too big for one inode, an
//! unknown attribute namespace, a truncate past the largest file): the
//! engine must refuse it at the call and go on.
//!
//! Half the workloads start on data that predates the mount (made directly
//! in the backing store before a `mount` step), so cache misses, loading
//! directories and renaming or truncating files the engine did not write
//! get their share.
//!
//! Every step it emits is valid in the reference model at that point, so
//! the engine must accept each one, or refuse it as the model says
//! (`Model::refused_with`). The same seed gives the same script.

use super::model::{app_dir, Model, SHARED};
use super::script::{Step, Target, APPS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

const FILE_NAMES: &[&str] = &["f0", "f1", "f2", "db", "db-journal", "tmp"];
const DIR_NAMES: &[&str] = &["d0", "d1"];
const LINK_NAMES: &[&str] = &["s0", "s1"];
const XATTR_NAMES: &[&str] = &["user.k0", "user.k1", "user.k2"];
/// A namespace no Linux file system keeps (`EOPNOTSUPP`).
const FOREIGN_XATTR: &str = "foo.k";
/// Beyond ext4's largest file (`EFBIG`).
const HUGE_SIZE: u64 = 1 << 45;
const PERMS: &[u32] = &[0o644, 0o600, 0o640, 0o755];
/// Files stay below this size so crash states stay cheap to compare.
const MAX_FILE: u64 = 48 * 1024;
const PAGE: u64 = 4096;

struct Generator {
    rng: StdRng,
    model: Model,
    steps: Vec<Step>,
    handle_app: HashMap<u32, usize>,
    next_handle: u32,
    next_pattern: u32,
}

/// A script of about `len` steps (plus set-up and the final shutdown).
pub fn generate(seed: u64, len: usize) -> Vec<Step> {
    let mut g = Generator {
        rng: StdRng::seed_from_u64(seed),
        model: Model::default(),
        steps: Vec::new(),
        handle_app: HashMap::new(),
        next_handle: 1,
        next_pattern: 1,
    };
    if g.rng.gen_bool(0.5) {
        g.populate();
        g.emit(Step::Mount);
    } else {
        for app in 0..APPS {
            g.emit(Step::Mkdir { app, path: app_dir(app), perm: 0o755 });
        }
        g.emit(Step::Mkdir { app: 0, path: SHARED.into(), perm: 0o777 });
    }
    while g.steps.len() < len {
        let app = g.rng.gen_range(0..APPS);
        let area = if g.rng.gen_bool(0.12) { SHARED.to_string() } else { app_dir(app) };
        g.action(app, &area);
    }
    g.emit(Step::Shutdown);
    g.steps
}

impl Generator {
    /// Appends `step` if the model accepts it; false if it refused. A step
    /// the backing store's limits forbid is appended and changes nothing.
    fn emit(&mut self, step: Step) -> bool {
        if self.model.refused_with(&step).is_some() {
            self.steps.push(step);
            return false;
        }
        if self.model.apply(&step).is_err() {
            return false;
        }
        match &step {
            Step::Create { app, open: Some(h), .. } | Step::Tmpfile { app, handle: h, .. } => {
                self.handle_app.insert(*h, *app);
            }
            Step::Close { handle, .. } => {
                self.handle_app.remove(handle);
            }
            _ => {}
        }
        self.steps.push(step);
        true
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.rng.gen_range(0..items.len())].clone())
    }

    fn own_handles(&self, app: usize) -> Vec<u32> {
        self.model.handles().into_iter().filter(|h| self.handle_app.get(h) == Some(&app)).collect()
    }

    /// A file of the area, or now and then an open handle of the app.
    fn pick_file(&mut self, app: usize, area: &str) -> Option<Target> {
        let handles = self.own_handles(app);
        if !handles.is_empty() && self.rng.gen_bool(0.3) {
            return self.pick(&handles).map(Target::Handle);
        }
        let (files, _, _) = self.model.paths_under(area);
        self.pick(&files).map(Target::Path)
    }

    /// A name not in use, in the area or one of its subdirectories.
    fn new_path(&mut self, area: &str, names: &[&str]) -> Option<String> {
        let (_, dirs, _) = self.model.paths_under(area);
        for _ in 0..8 {
            let dir = self.pick(&dirs)?;
            let name = self.pick(names)?;
            let path = format!("{dir}/{name}");
            if !self.model.exists(&path) {
                return Some(path);
            }
        }
        None
    }

    fn perm(&mut self) -> u32 {
        self.pick(PERMS).expect("non-empty")
    }

    fn write_step(&mut self, app: usize, file: Target) -> Step {
        let size = self.model.size_of(app, &file).unwrap_or(0);
        let r = &mut self.rng;
        let (mut offset, len) = match r.gen_range(0..5) {
            0 => (size, r.gen_range(1..3000)),
            1 => (r.gen_range(0..=size), r.gen_range(1..2000)),
            2 => {
                let page = r.gen_range(1..8) * PAGE;
                (page - r.gen_range(1..200), r.gen_range(2..600))
            }
            3 => (r.gen_range(0..8) * PAGE, PAGE * r.gen_range(1..3)),
            _ => (size + r.gen_range(PAGE..5 * PAGE), r.gen_range(1..500)),
        };
        offset = offset.min(MAX_FILE - len);
        let pattern = self.next_pattern;
        self.next_pattern += 1;
        Step::Write { app, file, offset, len, pattern }
    }

    /// A punch-hole or a zero-range: within a page, over whole pages,
    /// across the end of file, or over most of the file.
    fn clear_step(&mut self, app: usize, file: Target) -> Step {
        let size = self.model.size_of(app, &file).unwrap_or(0);
        let r = &mut self.rng;
        let (offset, len) = match r.gen_range(0..4) {
            0 => (r.gen_range(0..=size), r.gen_range(1..600)),
            1 => (r.gen_range(0..8) * PAGE, PAGE * r.gen_range(1..4)),
            2 => (r.gen_range(0..=size), r.gen_range(PAGE..4 * PAGE)),
            _ => (r.gen_range(0..=size / 4), size.max(1)),
        };
        let len = len.min(MAX_FILE - offset.min(MAX_FILE - 1));
        if r.gen_bool(0.5) {
            Step::Punch { app, file, offset, len }
        } else {
            Step::ZeroRange { app, file, offset, len, keep_size: r.gen_bool(0.5) }
        }
    }

    /// An `O_TMPFILE` file written through its handle, then linked into
    /// place (a new name, or a temporary one renamed over a file) or closed
    /// unnamed; now and then it stays open for later steps.
    fn tmpfile_then_link_or_close(&mut self, app: usize, area: &str) {
        let (_, dirs, _) = self.model.paths_under(area);
        let Some(dir) = self.pick(&dirs) else { return };
        let handle = self.take_handle();
        let perm = self.perm();
        if !self.emit(Step::Tmpfile { app, dir: dir.clone(), perm, handle }) {
            return;
        }
        for _ in 0..self.rng.gen_range(1..3) {
            let step = self.write_step(app, Target::Handle(handle));
            self.emit(step);
        }
        if self.rng.gen_bool(0.3) {
            self.emit(Step::Fsync { app, file: Target::Handle(handle) });
        }
        match self.rng.gen_range(0..3) {
            0 => {
                if let Some(to) = self.new_path(area, FILE_NAMES) {
                    self.emit(Step::LinkHandle { app, handle, to });
                }
            }
            1 => {
                let (files, _, _) = self.model.paths_under(area);
                let temp = format!("{dir}/new.{}", self.rng.gen_range(0..3));
                if let Some(dest) = self.pick(&files) {
                    if self.emit(Step::LinkHandle { app, handle, to: temp.clone() }) {
                        self.emit(Step::Rename { app, from: temp, to: dest });
                    }
                }
            }
            _ => {}
        }
        if self.rng.gen_bool(0.7) {
            self.emit(Step::Close { app, handle });
        }
    }

    /// One action of app `app` in `area`: usually one step, for a few
    /// patterns a short sequence.
    fn action(&mut self, app: usize, area: &str) {
        match self.rng.gen_range(0..123) {
            0..=27 => {
                if let Some(file) = self.pick_file(app, area) {
                    let step = self.write_step(app, file);
                    self.emit(step);
                }
            }
            28..=36 => {
                if let Some(path) = self.new_path(area, FILE_NAMES) {
                    let perm = self.perm();
                    let open = self.rng.gen_bool(0.3).then(|| self.take_handle());
                    self.emit(Step::Create { app, path, perm, open });
                }
            }
            37..=41 => self.write_temp_then_rename(app, area),
            42..=44 => self.unlink_while_open(app, area),
            45..=50 => {
                if let Some(file) = self.pick_file(app, area) {
                    let size = self.model.size_of(app, &file).unwrap_or(0);
                    let size = if self.rng.gen_bool(0.04) {
                        HUGE_SIZE
                    } else if size > 0 && self.rng.gen_bool(0.6) {
                        self.rng.gen_range(0..size)
                    } else {
                        (size + self.rng.gen_range(1..10_000)).min(MAX_FILE)
                    };
                    self.emit(Step::Truncate { app, file, size });
                }
            }
            51..=55 => self.rename(app, area),
            56 => {
                let (files, _, links) = self.model.paths_under(area);
                let all: Vec<String> = files.into_iter().chain(links).collect();
                if let (Some(a), Some(b)) = (self.pick(&all), self.pick(&all)) {
                    self.emit(Step::Exchange { app, a, b });
                }
            }
            57..=61 => {
                let (files, _, links) = self.model.paths_under(area);
                let all: Vec<String> = files.into_iter().chain(links).collect();
                if let Some(path) = self.pick(&all) {
                    self.emit(Step::Unlink { app, path });
                }
            }
            62..=64 => {
                if let Some(path) = self.new_path(area, DIR_NAMES) {
                    let perm = self.perm();
                    self.emit(Step::Mkdir { app, path, perm });
                }
            }
            65..=67 => {
                let (_, dirs, _) = self.model.paths_under(area);
                let empty: Vec<String> =
                    dirs.into_iter().filter(|d| d.contains('/') && self.model.is_empty_dir(d)).collect();
                if let Some(path) = self.pick(&empty) {
                    self.emit(Step::Rmdir { app, path });
                }
            }
            68..=70 => {
                let (files, _, _) = self.model.paths_under(area);
                if let (Some(from), Some(to)) = (self.pick(&files), self.new_path(area, FILE_NAMES)) {
                    self.emit(Step::Link { app, from, to });
                }
            }
            71..=73 => {
                if let Some(path) = self.new_path(area, LINK_NAMES) {
                    let target = format!("../t{}", self.rng.gen_range(0..100));
                    self.emit(Step::Symlink { app, path, target });
                }
            }
            74..=77 => {
                let (files, dirs, _) = self.model.paths_under(area);
                let all: Vec<String> = files.into_iter().chain(dirs).collect();
                if let Some(path) = self.pick(&all) {
                    let perm = self.perm();
                    self.emit(Step::Chmod { app, path, perm });
                }
            }
            78..=83 => {
                if let Some(file) = self.pick_file(app, area) {
                    self.emit(Step::Fsync { app, file });
                }
            }
            84..=87 => {
                let handles = self.own_handles(app);
                if let Some(handle) = self.pick(&handles) {
                    self.emit(Step::Close { app, handle });
                }
            }
            88..=90 => {
                self.emit(Step::Checkpoint);
            }
            91 => {
                let percent = self.pick(&[5, 60]).expect("non-empty");
                self.emit(Step::Battery { percent });
            }
            92..=97 => {
                let seconds = self.pick(&[1, 5, 20, 45, 130]).expect("non-empty");
                self.emit(Step::Tick { seconds });
            }
            98..=99 => {
                self.emit(Step::Input);
            }
            100..=107 => self.xattr(app, area),
            110..=116 => {
                if let Some(file) = self.pick_file(app, area) {
                    let step = self.clear_step(app, file);
                    self.emit(step);
                }
            }
            117..=120 => self.tmpfile_then_link_or_close(app, area),
            _ => {
                let (files, dirs, links) = self.model.paths_under(area);
                let all: Vec<String> =
                    files.into_iter().chain(links).chain(dirs.into_iter().filter(|d| d.contains('/'))).collect();
                if let (Some(a), Some(b)) = (self.pick(&all), self.pick(&all)) {
                    self.emit(Step::Exchange { app, a, b });
                }
            }
        }
    }

    /// Data that predates the mount: each app's directory with files (some
    /// sparse, some in a subdirectory) and maybe a symlink, and `shared/`
    /// with files of several apps. No hard links: names that share an inode
    /// before the mount show as separate files (a documented limit).
    fn populate(&mut self) {
        for app in 0..APPS {
            let area = app_dir(app);
            self.emit(Step::Mkdir { app, path: area.clone(), perm: 0o755 });
            if self.rng.gen_bool(0.6) {
                self.emit(Step::Mkdir { app, path: format!("{area}/d0"), perm: 0o750 });
            }
            for _ in 0..self.rng.gen_range(1..=4) {
                self.populate_file(app, &area);
            }
            if let Some(path) = self.new_path(&area, LINK_NAMES).filter(|_| self.rng.gen_bool(0.5)) {
                self.emit(Step::Symlink { app, path, target: "f0".into() });
            }
        }
        self.emit(Step::Mkdir { app: 0, path: SHARED.into(), perm: 0o777 });
        for _ in 0..self.rng.gen_range(0..=2) {
            let app = self.rng.gen_range(0..APPS);
            self.populate_file(app, SHARED);
        }
    }

    fn populate_file(&mut self, app: usize, area: &str) {
        let Some(path) = self.new_path(area, FILE_NAMES) else { return };
        let perm = self.perm();
        self.emit(Step::Create { app, path: path.clone(), perm, open: None });
        for _ in 0..self.rng.gen_range(0..=2) {
            let step = self.write_step(app, Target::Path(path.clone()));
            self.emit(step);
        }
    }

    /// Sets an extended attribute on a file or directory, or now and then
    /// removes one. Some values are big: two or three of them do not fit in
    /// one ext4 inode (half the attributes go to the area's directory).
    fn xattr(&mut self, app: usize, area: &str) {
        let (files, dirs, _) = self.model.paths_under(area);
        let all: Vec<String> = files.into_iter().chain(dirs).collect();
        // Half of them on the area's own directory, so that values pile up.
        let path = if self.rng.gen_bool(0.5) { Some(area.to_string()) } else { self.pick(&all) };
        let Some(path) = path.filter(|p| self.model.exists(p)) else { return };
        let present = self.model.xattr_names(&path);
        if !present.is_empty() && self.rng.gen_bool(0.3) {
            let name = self.pick(&present).expect("non-empty");
            self.emit(Step::RemoveXattr { app, path, name });
        } else {
            let name = match self.rng.gen_bool(0.1) {
                true => FOREIGN_XATTR.to_string(),
                false => self.pick(XATTR_NAMES).expect("non-empty").to_string(),
            };
            let pattern = self.next_pattern;
            self.next_pattern += 1;
            let len = if self.rng.gen_bool(0.4) { self.rng.gen_range(1500..2600) } else { self.rng.gen_range(1..40) };
            self.emit(Step::SetXattr { app, path, name, pattern, len });
        }
    }

    fn take_handle(&mut self) -> u32 {
        self.next_handle += 1;
        self.next_handle - 1
    }

    /// Renames a file or symlink over another file or to a new name, or a
    /// directory to a new name.
    fn rename(&mut self, app: usize, area: &str) {
        let (files, dirs, links) = self.model.paths_under(area);
        let subdirs: Vec<String> = dirs.into_iter().filter(|d| d.contains('/')).collect();
        let (from, to) = if !subdirs.is_empty() && self.rng.gen_bool(0.25) {
            let empty: Vec<String> = subdirs.iter().filter(|d| self.model.is_empty_dir(d)).cloned().collect();
            let to = if self.rng.gen_bool(0.3) { self.pick(&empty) } else { self.new_path(area, DIR_NAMES) };
            (self.pick(&subdirs), to)
        } else {
            let movable: Vec<String> = files.iter().cloned().chain(links).collect();
            let to = if self.rng.gen_bool(0.5) { self.pick(&files) } else { self.new_path(area, FILE_NAMES) };
            (self.pick(&movable), to)
        };
        if let (Some(from), Some(to)) = (from, to) {
            if from != to {
                self.emit(Step::Rename { app, from, to });
            }
        }
    }

    /// Write a new version under a temporary name, maybe fsync it, rename it
    /// over the real file (SQLite-style atomic replace).
    fn write_temp_then_rename(&mut self, app: usize, area: &str) {
        let (files, _, _) = self.model.paths_under(area);
        let Some(dest) = self.pick(&files) else { return };
        let dir = dest.rsplit_once('/').map_or(area.to_string(), |(d, _)| d.to_string());
        let temp = format!("{dir}/new.{}", self.rng.gen_range(0..3));
        let perm = self.perm();
        if !self.emit(Step::Create { app, path: temp.clone(), perm, open: None }) {
            return;
        }
        for _ in 0..self.rng.gen_range(1..3) {
            let step = self.write_step(app, Target::Path(temp.clone()));
            self.emit(step);
        }
        if self.rng.gen_bool(0.5) {
            self.emit(Step::Fsync { app, file: Target::Path(temp.clone()) });
        }
        self.emit(Step::Rename { app, from: temp, to: dest });
    }

    /// Create a file and keep it open, write, unlink it, write through the
    /// handle again (the data must not come back under any name).
    fn unlink_while_open(&mut self, app: usize, area: &str) {
        let Some(path) = self.new_path(area, FILE_NAMES) else { return };
        let handle = self.take_handle();
        let perm = self.perm();
        if !self.emit(Step::Create { app, path: path.clone(), perm, open: Some(handle) }) {
            return;
        }
        let step = self.write_step(app, Target::Handle(handle));
        self.emit(step);
        if self.rng.gen_bool(0.5) {
            self.emit(Step::Checkpoint);
        }
        self.emit(Step::Unlink { app, path });
        let step = self.write_step(app, Target::Handle(handle));
        self.emit(step);
    }
}
