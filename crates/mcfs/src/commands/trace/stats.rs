//! `mcfs trace stats FILE [--json]`: what a trace holds — events by kind, per app (events, bytes read and
//! written, flushes, inputs) and its time span — read in one streaming pass, with warnings about what
//! would mislead a replay (`mcfs_sim::lint`: a dominating idle gap, sector numbers taken for bytes).

use super::files::TraceInput;
use crate::output::print;
use crate::stats_table::human_bytes;
use clap::Args;
use mcfs_sim::lint::TraceLint;
use mcfs_sim::text::op_name;
use mcfs_sim::{EventKind, TraceEvent};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The trace, text or binary.
    #[arg(value_name = "FILE")]
    pub trace: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize, Default, Debug, PartialEq)]
struct TraceStats {
    form: &'static str,
    events: u64,
    /// Earliest and latest event times, in nanoseconds on the trace's clock.
    first_ns: u64,
    last_ns: u64,
    /// Events stamped earlier than the one before them.
    out_of_order: u64,
    by_kind: BTreeMap<&'static str, u64>,
    apps: BTreeMap<String, AppSummary>,
    /// What looks like a mistake, one sentence each.
    warnings: Vec<String>,
}

#[derive(Serialize, Default, Debug, PartialEq)]
struct AppSummary {
    events: u64,
    bytes_read: u64,
    bytes_written: u64,
    /// fsync and fdatasync calls.
    flushes: u64,
    inputs: u64,
}

impl TraceStats {
    fn add(&mut self, event: &TraceEvent, previous_ns: Option<u64>) {
        if previous_ns.is_some_and(|p| event.time_ns < p) {
            self.out_of_order += 1;
        }
        self.first_ns = if self.events == 0 { event.time_ns } else { self.first_ns.min(event.time_ns) };
        self.last_ns = self.last_ns.max(event.time_ns);
        self.events += 1;
        *self.by_kind.entry(op_name(&event.kind)).or_default() += 1;
        let app = self.apps.entry(event.app.to_string()).or_default();
        app.events += 1;
        match event.kind {
            EventKind::Read { len, .. } => app.bytes_read = app.bytes_read.saturating_add(len),
            EventKind::Write { len, .. } => app.bytes_written = app.bytes_written.saturating_add(len),
            EventKind::Fsync { .. } | EventKind::Fdatasync { .. } => app.flushes += 1,
            EventKind::Input { .. } => app.inputs += 1,
            _ => {}
        }
    }
}

pub fn run(args: &StatsArgs) -> Result<(), String> {
    let mut input = TraceInput::open(&args.trace)?;
    let mut stats = TraceStats { form: input.form().name(), ..TraceStats::default() };
    let mut previous = None;
    let mut lint = TraceLint::default();
    for event in &mut input {
        let event = event?;
        stats.add(&event, previous);
        lint.add(&event);
        previous = Some(event.time_ns);
    }
    stats.warnings = lint.warnings();
    if args.json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| format!("cannot print stats: {e}"))?;
        return print(&(text + "\n"));
    }
    print(&render(&args.trace.display().to_string(), input.size(), &stats))
}

fn seconds(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000_000)
}

fn render(name: &str, size: u64, s: &TraceStats) -> String {
    let mut out = format!("{name}: {} trace, {}, {} events\n", s.form, human_bytes(size), s.events);
    if s.events == 0 {
        return out;
    }
    let _ = writeln!(
        out,
        "time: {} to {} ({}), {} out of order",
        seconds(s.first_ns),
        seconds(s.last_ns),
        seconds(s.last_ns - s.first_ns),
        s.out_of_order
    );
    out.push_str("events by kind\n");
    let width = s.by_kind.keys().map(|k| k.len()).max().unwrap_or(0);
    for (kind, count) in &s.by_kind {
        let _ = writeln!(out, "  {kind:<width$}  {count}");
    }
    let mut rows = vec![["APP", "EVENTS", "READ", "WRITTEN", "FLUSHES", "INPUTS"].map(String::from)];
    for (app, a) in &s.apps {
        rows.push([
            app.clone(),
            a.events.to_string(),
            human_bytes(a.bytes_read),
            human_bytes(a.bytes_written),
            a.flushes.to_string(),
            a.inputs.to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..6).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    out.push_str("apps\n");
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    for warning in &s.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t: u64, app: &str, kind: EventKind) -> TraceEvent {
        TraceEvent { time_ns: t, app: app.into(), pid: 1, kind }
    }

    #[test]
    fn counts_kinds_apps_bytes_and_disorder() {
        let mut s = TraceStats::default();
        let events = [
            event(5_000_000, "a", EventKind::Write { path: b"/x"[..].into(), offset: 0, len: 100 }),
            event(3_000_000, "a", EventKind::Fsync { path: b"/x"[..].into() }),
            event(9_000_000, "b", EventKind::Read { path: b"/y"[..].into(), offset: 0, len: 7 }),
        ];
        let mut previous = None;
        for e in &events {
            s.add(e, previous);
            previous = Some(e.time_ns);
        }
        assert_eq!((s.events, s.first_ns, s.last_ns, s.out_of_order), (3, 3_000_000, 9_000_000, 1));
        assert_eq!(s.by_kind["write"], 1);
        assert_eq!(s.apps["a"], AppSummary { events: 2, bytes_written: 100, flushes: 1, ..AppSummary::default() });
        assert_eq!(s.apps["b"].bytes_read, 7);
        let table = render("t.trace", 10, &s);
        assert!(table.contains("0.003 s to 0.009 s"), "{table}");
        assert!(table.lines().any(|l| l.trim_start().starts_with('a') && l.contains("100 B")), "{table}");
        assert!(!table.contains("warning"), "{table}");
        s.warnings.push("a gap".into());
        assert!(render("t.trace", 10, &s).ends_with("warning: a gap\n"));
    }
}
