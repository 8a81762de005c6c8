//! The trace model: one [`TraceEvent`] per thing that happened, in the order it happened.
//!
//! An event says when (nanoseconds on the trace's own clock), who (app and process) and what ([`EventKind`]).
//! Paths are raw byte strings, as the kernel sees them, so any file name survives every format. The model is
//! the same for both on-disk forms; `FORMAT_NAME` and `FORMAT_VERSION` name it in both headers.

/// Name of the format, written in the text header and implied by the binary magic.
pub const FORMAT_NAME: &str = "mcfs-trace";
/// Version of the format the writers write; readers read it and every older one (see docs/TRACE_FORMAT.md,
/// "Version policy").
pub const FORMAT_VERSION: u32 = 2;
/// Oldest version the readers still read.
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Whether readers read `version`.
pub fn version_is_known(version: u64) -> bool {
    (u64::from(OLDEST_FORMAT_VERSION)..=u64::from(FORMAT_VERSION)).contains(&version)
}

/// A file path as raw bytes (not necessarily UTF-8).
pub type PathBytes = std::sync::Arc<[u8]>;

/// One event of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Time on the trace's clock, in nanoseconds.
    pub time_ns: u64,
    /// The app the event belongs to (the unit of policy, e.g. `com.twitter.android`).
    pub app: std::sync::Arc<str>,
    /// Process (or thread) id that issued it; 0 when unknown.
    pub pid: u32,
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// Open an existing file.
    Open {
        path: PathBytes,
    },
    /// Open a file, creating it if missing (`creat`, `O_CREAT`).
    Create {
        path: PathBytes,
    },
    Read {
        path: PathBytes,
        offset: u64,
        len: u64,
    },
    Write {
        path: PathBytes,
        offset: u64,
        len: u64,
    },
    Fsync {
        path: PathBytes,
    },
    Fdatasync {
        path: PathBytes,
    },
    /// Set the file's size to `size` bytes.
    Truncate {
        path: PathBytes,
        size: u64,
    },
    Unlink {
        path: PathBytes,
    },
    Rename {
        from: PathBytes,
        to: PathBytes,
    },
    /// A new name `to` for the file named `from` (a hard link, `link(2)`); both names stay. Version 2 on.
    Link {
        from: PathBytes,
        to: PathBytes,
    },
    Mkdir {
        path: PathBytes,
    },
    Rmdir {
        path: PathBytes,
    },
    Close {
        path: PathBytes,
    },
    /// A user-input operation (a tap, or a drag merged into one operation) lasting `duration_ns`.
    Input {
        input: InputKind,
        duration_ns: u64,
    },
    /// App lifecycle.
    Launch,
    Foreground,
    Background,
    Exit,
    /// Battery level in percent (0..=100).
    Battery {
        percent: u8,
    },
    /// Screen switched on or off.
    Screen {
        on: bool,
    },
}

impl EventKind {
    /// Whether the event is a file operation (a file system performs it) rather than a lifecycle, input,
    /// battery or screen event (a replay takes note and goes on).
    pub fn is_file_op(&self) -> bool {
        !matches!(
            self,
            EventKind::Input { .. }
                | EventKind::Launch
                | EventKind::Foreground
                | EventKind::Background
                | EventKind::Exit
                | EventKind::Battery { .. }
                | EventKind::Screen { .. }
        )
    }
}

impl EventKind {
    /// First format version that has this kind of event; a reader refuses it in an older trace.
    pub fn since_version(&self) -> u32 {
        match self {
            EventKind::Link { .. } => 2,
            _ => 1,
        }
    }
}

/// Refuses an event kind the trace's `version` does not have (a reader would otherwise accept a file that
/// an older reader, for which it claims to be written, cannot read).
pub(crate) fn check_kind_in_version(kind: &EventKind, version: u32) -> Result<(), String> {
    let since = kind.since_version();
    if since > version {
        return Err(format!(
            "'{}' needs {FORMAT_NAME} version {since}, but the trace is version {version}",
            crate::text::op_name(kind)
        ));
    }
    Ok(())
}

/// Kind of a user-input operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Tap,
    Drag,
}

/// Highest battery level accepted by the readers.
pub const MAX_BATTERY_PERCENT: u8 = 100;
