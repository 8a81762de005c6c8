//! Runs the built `mcfs` binary's sweeps (`mcfs sim --sweep`): the same inputs give the same table
//! whatever the number of jobs, each run's JSON is what `mcfs sim --json` prints for it, the run list and
//! single runs that other runners use, a failing run that stays a row and fails the command, and the errors
//! of a bad SWEEP.toml, each naming the file and the key.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{run_cli as mcfs, stderr_of as stderr};

fn assert_ok(out: &Output) {
    assert!(out.status.success(), "status {:?}, stderr: {}", out.status, stderr(out));
}

fn s(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// Two synthetic traces in DIR/traces and a SWEEP.toml over them × two inline configs × `devices`.
fn setup(dir: &Path, devices: &str) -> PathBuf {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for (name, io, seed) in [("fb.bin", "fsync-moderate", "2"), ("tw.trace", "fsync-heavy", "1")] {
        let args = ["trace", "synth", "--io", io, "--user", "scroller", "--seed", seed, "--duration", "20"];
        assert_ok(&mcfs(&[&args[..], &["-o", s(&traces.join(name))]].concat()));
    }
    let sweep = dir.join("sweep.toml");
    let text = format!(
        "traces = [\"traces/*\"]\ndevices = {devices}\nout = \"results\"\n\
         [configs]\nsync = {{ mode = \"sync\" }}\ndefault = {{}}\n"
    );
    std::fs::write(&sweep, text).unwrap();
    sweep
}

fn table(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("results/results.csv")).unwrap()
}

#[test]
fn the_table_is_the_same_bytes_for_one_job_and_four_and_runs_match_mcfs_sim() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = setup(dir.path(), "[\"ufs\", \"emmc\"]");
    let one = mcfs(&["sim", "--sweep", s(&sweep), "--jobs", "1"]);
    assert_ok(&one);
    let first = table(dir.path());
    std::fs::remove_dir_all(dir.path().join("results")).unwrap();
    let four = mcfs(&["sim", "--sweep", s(&sweep), "--jobs", "4"]);
    assert_ok(&four);
    assert_eq!(first, table(dir.path()), "same inputs, same table, whatever the job count");

    let lines: Vec<&str> = first.lines().collect();
    assert!(lines[0].starts_with("key,trace,config,device,status,error,timing,events_replayed,"), "{}", lines[0]);
    let keys: Vec<&str> = lines[1..].iter().map(|l| l.split(',').next().unwrap()).collect();
    let expected = [
        "fb@default@emmc",
        "fb@default@ufs",
        "fb@sync@emmc",
        "fb@sync@ufs",
        "tw@default@emmc",
        "tw@default@ufs",
        "tw@sync@emmc",
        "tw@sync@ufs",
    ];
    assert_eq!(keys, expected, "one row per run, sorted by key");
    assert!(lines[1..].iter().all(|l| l.contains(",ok,,closed-loop,")), "{first}");
    let progress = stderr(&four);
    assert_eq!(progress.lines().filter(|l| l.starts_with("sweep: ") && l.ends_with(" ok")).count(), 8, "{progress}");
    assert!(progress.contains("sweep: 8/8 "), "{progress}");

    let config = dir.path().join("sync.toml");
    std::fs::write(&config, "mode = \"sync\"\n").unwrap();
    let trace = dir.path().join("traces/tw.trace");
    let single = mcfs(&["sim", "--trace", s(&trace), "--config", s(&config), "--device", "ufs", "--json"]);
    assert_ok(&single);
    let run_json = std::fs::read(dir.path().join("results/runs/tw@sync@ufs.json")).unwrap();
    assert_eq!(run_json, single.stdout, "a run's JSON is what mcfs sim --json prints for it");
}

#[test]
fn the_run_list_single_runs_and_the_table_from_the_runs_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = setup(dir.path(), "[\"emmc\"]");
    let list = mcfs(&["sim", "--sweep", s(&sweep), "--list"]);
    assert_ok(&list);
    let listing: serde_json::Value = serde_json::from_slice(&list.stdout).expect("--list prints JSON");
    let runs = listing["runs"].as_array().unwrap();
    let keys: Vec<&str> = runs.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["fb@default@emmc", "fb@sync@emmc", "tw@default@emmc", "tw@sync@emmc"]);
    assert_eq!(runs[3]["config"], "sync");
    assert!(runs[3]["trace_file"].as_str().unwrap().ends_with("traces/tw.trace"), "{}", runs[3]);
    let runs_dir = PathBuf::from(listing["runs_dir"].as_str().unwrap());
    assert!(!runs_dir.exists(), "--list runs nothing");

    for key in &keys[..3] {
        assert_ok(&mcfs(&["sim", "--sweep", s(&sweep), "--only", key]));
    }
    assert!(runs_dir.join("tw@default@emmc.json").exists());
    assert!(!runs_dir.join("tw@sync@emmc.json").exists(), "--only runs one run");
    let partial = mcfs(&["sim", "--sweep", s(&sweep), "--table-only"]);
    assert_eq!(partial.status.code(), Some(1), "a run with no result fails the table");
    assert!(stderr(&partial).contains("1 of 4 run(s) failed") && stderr(&partial).contains("tw@sync@emmc"));
    let rows = table(dir.path());
    let missing = rows.lines().find(|l| l.starts_with("tw@sync@emmc,")).unwrap();
    assert!(missing.contains(",failed,") && missing.contains("has not been done"), "{missing}");

    assert_ok(&mcfs(&["sim", "--sweep", s(&sweep), "--only", "tw@sync@emmc"]));
    assert_ok(&mcfs(&["sim", "--sweep", s(&sweep), "--table-only"]));
    let pieced = table(dir.path());
    std::fs::remove_dir_all(dir.path().join("results")).unwrap();
    assert_ok(&mcfs(&["sim", "--sweep", s(&sweep)]));
    assert_eq!(pieced, table(dir.path()), "runs done one by one make the table of the whole sweep");

    let unknown = mcfs(&["sim", "--sweep", s(&sweep), "--only", "tw@fast@emmc"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("no run 'tw@fast@emmc'"), "{}", stderr(&unknown));
}

#[test]
fn a_failing_run_is_a_row_with_its_error_and_the_sweep_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = setup(dir.path(), "[\"emmc\"]");
    std::fs::write(dir.path().join("traces/bad.trace"), "mcfs-trace 1\n0 a 1 launch\n1 a 1 write /d/f 0\n").unwrap();
    std::fs::write(dir.path().join("traces/.hidden.trace"), "not a trace").unwrap();
    let out = mcfs(&["sim", "--sweep", s(&sweep), "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("2 of 6 run(s) failed"), "{err}");
    assert!(err.contains("bad@default@emmc: ") && err.contains("bad@sync@emmc: "), "{err}");
    assert!(err.contains("line 3"), "the error says what is wrong: {err}");
    let rows = table(dir.path());
    assert_eq!(rows.lines().count(), 7, "hidden files are no traces: {rows}");
    let bad = rows.lines().find(|l| l.starts_with("bad@default@emmc,")).unwrap();
    assert!(bad.contains(",failed,") && bad.contains("bad.trace: line 3"), "{bad}");
    assert_eq!(rows.lines().filter(|l| l.contains(",ok,")).count(), 4, "the other runs are done: {rows}");
    assert!(dir.path().join("results/runs/bad@sync@emmc.error").exists());
}

#[test]
fn a_bad_sweep_file_names_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), "[\"emmc\"]");
    std::fs::write(dir.path().join("profile.toml"), "name = \"x\"\n").unwrap();
    for config in ["a", "b"] {
        std::fs::create_dir_all(dir.path().join(config)).unwrap();
        std::fs::write(dir.path().join(config).join("x.toml"), "").unwrap();
    }
    let cases: &[(&str, &[&str])] = &[
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfig = [\"a.toml\"]\n", &["unknown key 'config'"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nconfigs = { d = {} }\n", &["missing key 'out'"]),
        ("traces = [\"none/*.bin\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = {} }\n", &["traces[0]", "matches no file"]),
        ("traces = [\"traces/x.bin\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = {} }\n", &["traces[0]", "x.bin"]),
        ("traces = [\"traces/*\"]\ndevices = [\"nvme\"]\nout = \"r\"\nconfigs = { d = {} }\n", &["devices[0]", "nvme"]),
        ("traces = [\"traces/*\"]\ndevices = [\"profile.toml\"]\nout = \"r\"\nconfigs = { d = {} }\n", &["devices[0]", "profile.toml"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = { cache_sise = 1 } }\n", &["configs.d", "cache_sise"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = \"absent.toml\" }\n", &["configs.d", "absent.toml"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = [\"a/x.toml\", \"b/x.toml\"]\n", &["configs[1]", "both make the name 'x'"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = {} }\nopen_loop = 1\n", &["open_loop", "true or false"]),
        ("traces = []\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { d = {} }\n", &["traces", "empty"]),
        ("traces = [\"traces/*\", \"traces/fb.bin\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { \"a@b\" = {} }\n", &["traces[1]", "'fb'"]),
        ("traces = [\"traces/*\"]\ndevices = [\"emmc\"]\nout = \"r\"\nconfigs = { \"a@b\" = {} }\n", &["configs.a@b", "cannot name runs"]),
        ("traces = [\"traces/*\"\n", &["line 1"]),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let out = mcfs(&["sim", "--sweep", s(&file)]);
        assert_eq!(out.status.code(), Some(1), "{text}");
        let err = stderr(&out);
        assert!(err.starts_with(&format!("mcfs: {}: ", file.display())), "{text}: {err}");
        for w in wanted.iter() {
            assert!(err.contains(w), "{text}: wanted '{w}' in {err}");
        }
        assert!(!dir.path().join("r").exists(), "nothing runs on a bad sweep file");
    }
    let out = mcfs(&["sim", "--sweep", s(&dir.path().join("absent.toml"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("absent.toml") && stderr(&out).contains("No such file"), "{}", stderr(&out));
    let out = mcfs(&["sim", "--sweep", s(&dir.path().join("absent.toml")), "--json"]);
    assert_eq!(out.status.code(), Some(2), "--json does not go with --sweep");
}

/// Every built-in device profile is a sweep device by its name, and names its runs.
#[test]
fn every_builtin_device_profile_names_sweep_runs() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = mcfs_device::DeviceProfile::BUILTIN;
    let sweep = setup(dir.path(), &format!("{builtin:?}"));
    let list = mcfs(&["sim", "--sweep", s(&sweep), "--list"]);
    assert_ok(&list);
    let listing: serde_json::Value = serde_json::from_slice(&list.stdout).expect("--list prints JSON");
    let keys: Vec<&str> = listing["runs"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    for device in builtin {
        assert!(keys.contains(&format!("fb@default@{device}").as_str()), "{device}: {keys:?}");
    }
    assert_eq!(keys.len(), 2 * 2 * builtin.len());
}
