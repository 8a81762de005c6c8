//! Loads the engine configuration from a TOML file. Every error names the
//! file first, then the cause (the I/O error, the TOML error with its line,
//! or the rule `Config::validate` found broken), so a user can fix it.

use mcfs_core::Config;
use std::path::Path;

/// `None` means "no --config given": the engine's defaults.
pub fn load(path: Option<&Path>) -> Result<Config, String> {
    let Some(path) = path else {
        return Ok(Config::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {}", path.display(), e))?;
    parse(&text).map_err(|cause| format!("{}: {}", path.display(), cause))
}

/// Parses and validates config text; the error has no file name yet.
pub fn parse(text: &str) -> Result<Config, String> {
    let config: Config = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    config.validate()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::SyncMode;
    use std::io::Write;

    fn write_temp(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn no_file_means_defaults() {
        assert_eq!(load(None).unwrap(), Config::default());
    }

    #[test]
    fn missing_file_names_file_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.toml");
        let err = load(Some(&path)).unwrap_err();
        assert!(err.starts_with(&format!("{}: ", path.display())), "{err}");
        assert!(err.contains("No such file"), "{err}");
    }

    #[test]
    fn directory_is_not_a_config() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(Some(dir.path())).unwrap_err();
        assert!(err.starts_with(&format!("{}: ", dir.path().display())), "{err}");
        assert!(err.contains("directory"), "{err}");
    }

    #[test]
    fn syntax_error_names_file_and_line() {
        let f = write_temp("cache_size = 1048576\nmode = \n");
        let err = load(Some(f.path())).unwrap_err();
        assert!(err.starts_with(&format!("{}: ", f.path().display())), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn unknown_key_and_wrong_type_are_errors() {
        let err = parse("cache_sise = 1\n").unwrap_err();
        assert!(err.contains("cache_sise"), "{err}");
        let err = parse("cache_size = \"big\"\n").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
        let err = parse("[[apps]]\nname = \"a\"\nmode = \"lazy\"\n").unwrap_err();
        assert!(err.contains("lazy"), "{err}");
    }

    #[test]
    fn validation_errors_are_reported_with_the_file() {
        let f = write_temp("dirty_high_ratio = 1.5\n");
        let err = load(Some(f.path())).unwrap_err();
        assert!(err.starts_with(&format!("{}: ", f.path().display())), "{err}");
        assert!(err.contains("dirty_high_ratio"), "{err}");
    }

    #[test]
    fn whole_seconds_may_be_written_as_integers() {
        assert_eq!(parse("max_stale_seconds = 120\n").unwrap().max_stale_seconds, 120.0);
        assert!(parse("max_stale_seconds = 0\n").unwrap_err().contains("max_stale_seconds"));
    }

    #[test]
    fn apps_are_parsed() {
        let c = parse("mode = \"sync\"\n[[apps]]\nname = \"mail\"\nuids = [10001, 10002]\nmode = \"memory\"\nmax_stale_seconds = 5.0\n").unwrap();
        assert_eq!(c.mode, SyncMode::Sync);
        assert_eq!(c.apps.len(), 1);
        assert_eq!(c.apps[0].uids, vec![10001, 10002]);
        assert_eq!(c.apps[0].mode, Some(SyncMode::Memory));
        assert_eq!(c.apps[0].max_stale_bytes, None);
    }

    #[test]
    fn shipped_example_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/mcfs.toml");
        let c = load(Some(&path)).unwrap();
        assert!(!c.apps.is_empty(), "the example should show [[apps]]");
        assert_ne!(c, Config::default(), "the example should change something");
    }
}
