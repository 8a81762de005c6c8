//! Running the external tools the harness drives (mkfs.ext4, losetup, mount,
//! fio, postmark, dbench, git, the tools `scripts/bench-setup.sh` builds and
//! the mcfs binary itself). A call either returns the tool's stdout or
//! an error naming the command line, its exit status and what it said on
//! stderr, so a failed set-up step explains itself.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program args…` to completion with stdin on /dev/null.
pub fn run<I, S>(program: impl AsRef<OsStr>, args: I) -> Result<String, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    run_command(&mut command)
}

/// Runs a prepared command (its own environment, working directory or
/// stdin; stdin is /dev/null unless it sets one) to completion; the same
/// errors as `run`.
pub fn run_command(command: &mut Command) -> Result<String, String> {
    let args: Vec<OsString> = command.get_args().map(OsStr::to_owned).collect();
    let line = command_line(command.get_program(), &args);
    // output() gives the child a closed stdin unless the command sets one.
    let out = command.output().map_err(|e| format!("cannot run `{line}`: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // fio reports some errors on stdout only.
        let said = if stderr.trim().is_empty() { stdout.trim().to_string() } else { stderr.trim().to_string() };
        return Err(format!("`{line}` failed ({}): {}", out.status, last_lines(&said, 6)));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{line}` printed output that is not UTF-8"))
}

/// Fails with one message listing every tool that is not on PATH.
pub fn require_tools(tools: &[&str]) -> Result<(), String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| !std::env::split_paths(&path).any(|dir| is_executable(&dir.join(tool))))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "mcfs bench needs these programs on PATH: {} (scripts/bench-setup.sh installs them all)",
            missing.join(", ")
        ))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

fn command_line(program: &OsStr, args: &[OsString]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Long tool output would drown the table; the end usually says what failed.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_returns_stdout() {
        assert_eq!(run("sh", ["-c", "echo hi"]).unwrap(), "hi\n");
    }

    #[test]
    fn failure_names_the_command_status_and_stderr() {
        let err = run("sh", ["-c", "echo boom >&2; exit 3"]).unwrap_err();
        assert!(err.contains("sh -c echo boom >&2; exit 3"), "{err}");
        assert!(err.contains("exit status: 3"), "{err}");
        assert!(err.contains("boom"), "{err}");
        let err = run("/nonexistent/tool", ["x"]).unwrap_err();
        assert!(err.starts_with("cannot run `/nonexistent/tool x`"), "{err}");
    }

    #[test]
    fn a_prepared_command_keeps_its_environment_and_directory() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo $BENCH_VAR; pwd"]).env("BENCH_VAR", "set").current_dir("/");
        assert_eq!(run_command(&mut command).unwrap(), "set\n/\n");
        let err = run_command(Command::new("sh").args(["-c", "exit 4"])).unwrap_err();
        assert!(err.contains("`sh -c exit 4` failed"), "{err}");
    }

    #[test]
    fn missing_tools_are_listed_together() {
        assert!(require_tools(&["sh"]).is_ok());
        let err = require_tools(&["sh", "no-such-tool-a", "no-such-tool-b"]).unwrap_err();
        assert!(err.contains("no-such-tool-a, no-such-tool-b"), "{err}");
        assert!(!err.contains("sh,"), "{err}");
    }
}
