//! How far a sweep is, on stderr: a bar of runs done / total when stderr is a terminal, else one plain
//! line per finished run (`sweep: 3/8 KEY ok`), so logs of a sweep say which run failed and when.

use crate::output::eprint_line;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub struct Progress {
    total: usize,
    done: usize,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            if let Ok(style) = ProgressStyle::with_template("sweep {wide_bar} {pos}/{len} runs, {elapsed} eta {eta}") {
                bar.set_style(style);
            }
            bar
        });
        Progress { total, done: 0, bar }
    }

    /// The run `key` has finished; `error` says why it failed.
    pub fn finished(&mut self, key: &str, error: Option<&str>) {
        self.done += 1;
        let status = error.map_or_else(|| "ok".to_string(), |e| format!("failed: {e}"));
        match &self.bar {
            Some(bar) if error.is_some() => bar.println(format!("{key}: {status}")),
            Some(_) => {}
            None => eprint_line(&format!("sweep: {}/{} {key} {status}", self.done, self.total)),
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
