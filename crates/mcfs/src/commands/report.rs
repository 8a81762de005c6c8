//! `mcfs report --mobifs DIR --out FILE`: reads a study's results, writes its charts into the `report/`
//! directory next to FILE and replaces the study's section of FILE (creating FILE if missing), leaving
//! everything outside the section's markers as it was.

use crate::cli::ReportArgs;
use crate::report::{mobifs, results, splice};
use std::fs;
use std::path::{Path, PathBuf};

/// Directory of the charts, relative to the report file (also the link prefix in the Markdown).
const PLOT_DIR: &str = "report";

pub fn run(args: ReportArgs) -> Result<(), String> {
    let Some(dir) = &args.mobifs else {
        return Err("nothing to report: give a study's results directory (--mobifs DIR)".into());
    };
    let groups = results::load(dir)?;
    let section = mobifs::build(&groups, PLOT_DIR)?;
    let plot_dir = plot_dir(&args.out);
    fs::create_dir_all(&plot_dir).map_err(|e| format!("{}: {e}", plot_dir.display()))?;
    for (file, svg) in &section.plots {
        let path = plot_dir.join(file);
        fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let existing = match fs::read_to_string(&args.out) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", args.out.display())),
    };
    let text = splice::splice(existing.as_deref(), "mobifs", &section.markdown)
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    fs::write(&args.out, text).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "{}: MobiFS section from {} trace(s) in {} group(s); {} chart(s) in {}",
        args.out.display(),
        groups.iter().map(|g| g.traces.len()).sum::<usize>(),
        groups.len(),
        section.plots.len(),
        plot_dir.display()
    );
    Ok(())
}

/// `report/` next to the report file.
fn plot_dir(out: &Path) -> PathBuf {
    out.parent().unwrap_or(Path::new("")).join(PLOT_DIR)
}
