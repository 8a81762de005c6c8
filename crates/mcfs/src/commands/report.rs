//! `mcfs report [--mobifs DIR] [--fasttrack DIR] --out FILE`: reads each study's results, writes its
//! charts into the `report/` directory next to FILE and replaces the study's section of FILE (creating
//! FILE if missing), leaving everything outside the section's markers as it was.

use crate::cli::ReportArgs;
use crate::output::print;
use crate::report::{fasttrack, fasttrack_results, mobifs, results, splice};
use std::fs;
use std::path::{Path, PathBuf};

/// Directory of the charts, relative to the report file (also the link prefix in the Markdown).
const PLOT_DIR: &str = "report";

pub fn run(args: ReportArgs) -> Result<(), String> {
    if args.mobifs.is_none() && args.fasttrack.is_none() {
        return Err("nothing to report: give a study's results directory (--mobifs DIR, --fasttrack DIR)".into());
    }
    if let Some(dir) = &args.mobifs {
        let groups = results::load(dir)?;
        let section = mobifs::build(&groups, PLOT_DIR)?;
        write_section(&args.out, "mobifs", &section.markdown, &section.plots)?;
        print(&format!(
            "{}: MobiFS section from {} trace(s) in {} group(s); {} chart(s) in {}\n",
            args.out.display(),
            groups.iter().map(|g| g.traces.len()).sum::<usize>(),
            groups.len(),
            section.plots.len(),
            plot_dir(&args.out).display()
        ))?;
    }
    if let Some(dir) = &args.fasttrack {
        let points = fasttrack_results::load(dir)?;
        let section = fasttrack::build(&points, PLOT_DIR)?;
        write_section(&args.out, "fasttrack", &section.markdown, &section.plots)?;
        print(&format!(
            "{}: FastTrack section from {} run(s); {} chart(s) in {}\n",
            args.out.display(),
            points.runs(),
            section.plots.len(),
            plot_dir(&args.out).display()
        ))?;
    }
    Ok(())
}

/// Writes the charts next to `out` and puts `markdown` between the study's markers in `out`.
fn write_section(out: &Path, study: &str, markdown: &str, plots: &[(String, String)]) -> Result<(), String> {
    let plot_dir = plot_dir(out);
    fs::create_dir_all(&plot_dir).map_err(|e| format!("{}: {e}", plot_dir.display()))?;
    for (file, svg) in plots {
        let path = plot_dir.join(file);
        fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let existing = match fs::read_to_string(out) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", out.display())),
    };
    let text = splice::splice(existing.as_deref(), study, markdown).map_err(|e| format!("{}: {e}", out.display()))?;
    fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))
}

/// `report/` next to the report file.
fn plot_dir(out: &Path) -> PathBuf {
    out.parent().unwrap_or(Path::new("")).join(PLOT_DIR)
}
