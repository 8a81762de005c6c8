//! Build facts for `mcfs -V` and `mcfs --version` (OUT_DIR/version.rs,
//! included by src/version.rs): the git commit (or "unknown" outside a git
//! checkout, as in a crates tarball), the build profile, the target, the
//! optional commands built in, and the FUSE protocol version.

/// The FUSE kernel protocol version fuser 0.18 implements on Linux (its
/// private `FUSE_KERNEL_VERSION` and `FUSE_KERNEL_MINOR_VERSION`); the
/// kernel and fuser agree on the lower of this and the kernel's own at
/// mount time. `version::tests` ties it to the fuser version in Cargo.lock.
const FUSE_PROTOCOL: &str = "7.40";

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "unknown".into());
    let version = env("CARGO_PKG_VERSION");
    // The profile's own name (`release`, `checked`, `debug` for dev): the
    // directory of target/ it builds into, OUT_DIR's fourth ancestor
    // (PROFILE says only "release" or "debug", even for a custom profile).
    let out_dir = env("OUT_DIR");
    let profile = std::path::Path::new(&out_dir)
        .ancestors()
        .nth(3)
        .and_then(|dir| dir.file_name())
        .map_or_else(|| env("PROFILE"), |name| name.to_string_lossy().into_owned());
    let features: Vec<&str> = ["bench", "report", "sim"]
        .into_iter()
        .filter(|f| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase())).is_some())
        .collect();
    let features = if features.is_empty() { "none".to_string() } else { features.join(", ") };
    let short = format!("{version} (commit {commit}, {profile})");
    let long = format!(
        "{version}\ncommit:         {commit}\nbuild profile:  {profile}\ntarget:         {}\n\
         optional parts: {features}\nFUSE protocol:  {FUSE_PROTOCOL} (fuser 0.18; the kernel may agree on less)",
        env("TARGET")
    );
    let code = format!("pub const SHORT: &str = {short:?};\npub const LONG: &str = {long:?};\n");
    let out = std::path::Path::new(&out_dir).join("version.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    // A new commit (HEAD, or the branch it names) changes the answer.
    if let Some(file) = git(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={file}");
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(file) = git(&["rev-parse", "--path-format=absolute", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
