//! `mcfs config check`: the configuration checks `mcfs mount` runs before it
//! mounts (the file, the `-o` options over it, the foreground tasks file it
//! names), without a backing directory or a mount point, so that a config
//! can be checked where it is written (a build machine, a package's tests).

use crate::cli::{ConfigArgs, ConfigCheckArgs, ConfigCommand};
use crate::commands::mount::one_of;
use crate::{config_file, config_override, fg_watch, mount_options};

pub fn run(args: ConfigArgs) -> Result<(), String> {
    match args.command {
        ConfigCommand::Check(args) => check(args),
    }
}

fn check(args: ConfigCheckArgs) -> Result<(), String> {
    let options = mount_options::parse(&args.options)?;
    let file = one_of("FILE", args.file, "config", options.config_file)?;
    let config = config_override::apply(config_file::load(file.as_deref())?, &options.overrides)?;
    if let Some(tasks) = &config.fasttrack.tasks_file {
        fg_watch::check_tasks_file(tasks)?;
    }
    let what = file.map_or_else(|| "the defaults".to_string(), |f| f.display().to_string());
    let overridden = match options.overrides.len() {
        0 => String::new(),
        1 => " with 1 -o option".to_string(),
        n => format!(" with {n} -o options"),
    };
    println!("{what}{overridden}: ok");
    Ok(())
}
