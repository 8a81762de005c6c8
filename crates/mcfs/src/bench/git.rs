//! git on a real history: once per run, outside every target, a bare
//! repository of a few hundred commits is made (`make_source_repo`: text
//! files edited a few lines at a time, so packs hold deltas as real ones
//! do); on each target it is cloned through the pack protocol (`git clone
//! --no-local`: upload-pack, index-pack, checkout) and then `git gc`
//! repacks the clone. Seconds for each step (lower is better); the clone's
//! commit count is checked. Git reads no system or user config here.

use super::cmd;
use super::metrics::{Metric, Outcome};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Files in the first commit, and what each later commit does.
const FIRST_FILES: usize = 200;
const LINES_PER_FILE: usize = 80;
const FILES_EDITED_PER_COMMIT: usize = 5;
const LINES_EDITED_PER_FILE: usize = 3;
const WORDS: [&str; 16] = [
    "page", "cache", "fsync", "journal", "inode", "extent", "commit", "flush", "dirty", "clean", "write", "read",
    "block", "mount", "app", "tier",
];

fn git() -> Command {
    let mut command = Command::new("git");
    command.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    command
}

pub fn run(dir: &Path, source: &Path) -> Result<Outcome, String> {
    let clone = dir.join("clone");
    let url = format!("file://{}", source.display());
    let start = Instant::now();
    cmd::run_command(git().args(["clone", "--quiet", "--no-local", &url]).arg(&clone))?;
    let clone_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    cmd::run_command(git().arg("-C").arg(&clone).args(["gc", "--quiet"]))?;
    let gc_seconds = start.elapsed().as_secs_f64();
    let cloned = commit_count(&clone)?;
    let expected = commit_count(source)?;
    if cloned != expected {
        return Err(format!("the clone has {cloned} commits, its source {expected}"));
    }
    let mut outcome = Outcome::default();
    outcome.sample(Metric::GitCloneSeconds, clone_seconds);
    outcome.sample(Metric::GitGcSeconds, gc_seconds);
    outcome.extra("commits", cloned);
    Ok(outcome)
}

fn commit_count(repo: &Path) -> Result<u64, String> {
    let out = cmd::run_command(git().arg("-C").arg(repo).args(["rev-list", "--count", "HEAD"]))?;
    out.trim().parse().map_err(|_| format!("git rev-list --count printed {:?}", out.trim()))
}

/// A bare repository at `dir` with `commits` commits on `main`, made with
/// `git fast-import` from a stream this seed determines.
pub fn make_source_repo(dir: &Path, commits: u32, seed: u64) -> Result<PathBuf, String> {
    cmd::run_command(git().args(["init", "--quiet", "--bare", "--initial-branch=main"]).arg(dir))?;
    let stream_path = dir.join("history.fast-import");
    std::fs::write(&stream_path, history(commits, seed)).map_err(|e| format!("{}: {e}", stream_path.display()))?;
    let stream = File::open(&stream_path).map_err(|e| format!("{}: {e}", stream_path.display()))?;
    cmd::run_command(git().arg("-C").arg(dir).args(["fast-import", "--quiet"]).stdin(stream))?;
    std::fs::remove_file(&stream_path).map_err(|e| format!("{}: {e}", stream_path.display()))?;
    let made = commit_count(dir)?;
    if made != u64::from(commits) {
        return Err(format!("git fast-import made {made} commits, not {commits}"));
    }
    Ok(dir.to_path_buf())
}

/// The fast-import stream: a first commit of FIRST_FILES files, then
/// commits that each edit a few lines of a few files and add one file.
fn history(commits: u32, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let line = |rng: &mut StdRng| {
        let words: Vec<&str> = (0..8).map(|_| WORDS[rng.gen_range(0..WORDS.len())]).collect();
        words.join(" ")
    };
    let mut files: Vec<Vec<String>> = Vec::new();
    let mut stream = String::new();
    for n in 0..commits {
        let mut changed: Vec<usize> = Vec::new();
        if n == 0 {
            for _ in 0..FIRST_FILES {
                files.push((0..LINES_PER_FILE).map(|_| line(&mut rng)).collect());
            }
            changed.extend(0..FIRST_FILES);
        } else {
            for _ in 0..FILES_EDITED_PER_COMMIT {
                let f = rng.gen_range(0..files.len());
                for _ in 0..LINES_EDITED_PER_FILE {
                    let l = rng.gen_range(0..LINES_PER_FILE);
                    files[f][l] = line(&mut rng);
                }
                changed.push(f);
            }
            files.push((0..LINES_PER_FILE).map(|_| line(&mut rng)).collect());
            changed.push(files.len() - 1);
        }
        let message = format!("commit {n}\n");
        let time = 1_700_000_000 + u64::from(n) * 600;
        let _ = write!(
            stream,
            "commit refs/heads/main\ncommitter Bench <bench@example.invalid> {time} +0000\ndata {}\n{message}",
            message.len()
        );
        if n == 0 {
            stream.push_str("deleteall\n");
        }
        for f in changed {
            let text: String = files[f].iter().map(|l| format!("{l}\n")).collect();
            let _ = write!(stream, "M 100644 inline src/d{:02}/file{f:04}.txt\ndata {}\n{text}\n", f % 20, text.len());
        }
    }
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_is_deterministic_and_grows_by_one_file_per_commit() {
        let a = history(5, 9);
        assert_eq!(a, history(5, 9));
        assert_ne!(a, history(5, 10));
        assert_eq!(a.matches("commit refs/heads/main\n").count(), 5);
        // 200 files first, then 5 edits and one new file in each of 4 commits.
        assert_eq!(a.matches("M 100644 inline ").count(), FIRST_FILES + 4 * (FILES_EDITED_PER_COMMIT + 1));
        assert!(a.contains("src/d03/file0203.txt"), "the 4th added file");
    }

    #[test]
    fn a_source_repository_is_cloned_and_collected() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            eprintln!("git is not installed; skipping");
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        let source = make_source_repo(&scratch.path().join("src.git"), 12, 1).unwrap();
        let target = scratch.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let outcome = run(&target, &source).unwrap();
        assert_eq!(outcome.extras["commits"], 12);
        assert!(outcome.samples.iter().all(|(_, v)| *v > 0.0));
        assert!(target.join("clone/src/d00/file0000.txt").is_file());
        assert!(!source.join("history.fast-import").exists());
    }
}
