//! `mcfs report --mobifs` end to end: a tiny synthetic trace replayed by `mcfs sim --json` under the
//! study's three configs, then the report written into a file that already has hand-written text and
//! another study's section, which must survive; the charts land next to the file, and a second run gives
//! the same bytes.

mod common;

use common::run_cli as mcfs;
use std::fs;
use std::path::Path;
use std::process::Output;

const CONFIGS: [(&str, &str); 3] = [
    ("ext4", "transaction_policy = \"ext4-like\"\n"),
    ("mobifs-tpl", "transaction_policy = \"tpl\"\nidle_predictor = \"none\"\n"),
    ("mobifs", "transaction_policy = \"tpl\"\nidle_predictor = \"state-machine\"\n"),
];

fn ok(args: &[&str]) -> Output {
    let out = mcfs(args);
    assert!(out.status.success(), "mcfs {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// `DIR/synthetic/AB/CONFIG.json` for the three configs, from a 40 s synthetic trace.
fn results(dir: &Path) -> std::path::PathBuf {
    let trace = dir.join("ab.trace");
    ok(&[
        "trace",
        "synth",
        "--io",
        "e-peak",
        "--user",
        "skimmer",
        "--seed",
        "7",
        "--duration",
        "40",
        "-o",
        path(&trace),
    ]);
    let results = dir.join("results");
    let out_dir = results.join("synthetic").join("AB");
    fs::create_dir_all(&out_dir).unwrap();
    for (name, toml) in CONFIGS {
        let config = dir.join(format!("{name}.toml"));
        fs::write(&config, toml).unwrap();
        let out = ok(&["sim", "--trace", path(&trace), "--config", path(&config), "--device", "emmc", "--json"]);
        fs::write(out_dir.join(format!("{name}.json")), out.stdout).unwrap();
    }
    results
}

#[test]
fn report_writes_its_section_and_charts_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let results = results(dir.path());
    let report = dir.path().join("docs").join("REPORT.md");
    fs::create_dir_all(report.parent().unwrap()).unwrap();
    let before = "# Report\n\nWritten by hand.\n\n<!-- mobifs:begin -->\nstale\n<!-- mobifs:end -->\n\n\
                  ## Where we differ\n\nAlso by hand.\n<!-- fasttrack:begin -->\nFT\n<!-- fasttrack:end -->\n";
    fs::write(&report, before).unwrap();

    ok(&["report", "--mobifs", path(&results), "--out", path(&report)]);
    let text = fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# Report\n\nWritten by hand.\n\n<!-- mobifs:begin -->\n## MobiFS study"), "{text}");
    assert!(
        text.ends_with("<!-- mobifs:end -->\n\n## Where we differ\n\nAlso by hand.\n<!-- fasttrack:begin -->\nFT\n<!-- fasttrack:end -->\n"),
        "{text}"
    );
    assert!(!text.contains("stale"));
    for expected in [
        "### Synthetic suite: ten apps",
        "#### Figure 6: checkpoint intervals",
        "| geometric mean of tpl ÷ ext4-like (",
        "| mean RCs per prediction, LAM |",
        "| less data flushed, geometric mean over traces (1) |",
        "](report/fig13-synthetic.svg)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(text.contains("| AB | "), "a row for the trace: {text}");
    for chart in ["fig6", "fig8", "fig9", "fig13", "energy"] {
        let svg = fs::read_to_string(report.parent().unwrap().join("report").join(format!("{chart}-synthetic.svg")))
            .unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(svg.starts_with("<svg") && svg.contains("AB"), "{chart}");
    }

    ok(&["report", "--mobifs", path(&results), "--out", path(&report)]);
    assert_eq!(fs::read_to_string(&report).unwrap(), text, "the same results give the same report");
}

#[test]
fn report_errors_name_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let out = mcfs(&["report", "--out", path(&dir.path().join("R.md"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mobifs"));

    let missing = dir.path().join("no-results");
    let out = mcfs(&["report", "--mobifs", path(&missing), "--out", path(&dir.path().join("R.md"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-results"));
    assert!(!dir.path().join("R.md").exists(), "nothing written on error");

    let bad = dir.path().join("bad");
    fs::create_dir_all(bad.join("g").join("t")).unwrap();
    fs::write(bad.join("g").join("t").join("ext4.json"), "{\"not\": \"metrics\"}").unwrap();
    let out = mcfs(&["report", "--mobifs", path(&bad), "--out", path(&dir.path().join("R.md"))]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ext4.json") && err.contains("mcfs sim --json"), "{err}");
}
