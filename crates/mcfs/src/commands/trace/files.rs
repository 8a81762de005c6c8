//! Trace files for the `trace` and `sim` commands: reading either form (told apart by the binary magic)
//! while counting the bytes consumed, for progress bars, and writing a trace all or nothing.
//!
//! Invariant: an output file appears under its name only once every event is written and flushed. Until
//! then the events go to a temporary file beside it, which is removed when the command fails, so a failed
//! import or conversion never leaves a partial trace (nor replaces an existing one).

use clap::ValueEnum;
use mcfs_sim::binary::{BinaryReader, BinaryWriter, MAGIC};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::{TraceError, TraceEvent};
use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::record::BINARY_EXTENSION;

/// Extension of text traces written under chosen names (`trace synth --suite`).
pub const TEXT_EXTENSION: &str = "trace";

/// The two on-disk forms of a trace (docs/TRACE_FORMAT.md).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// One readable line per event.
    Text,
    /// Compact records.
    Binary,
}

impl Form {
    /// The form asked for, else the one the name implies: binary for `.bin`, text for anything else (as
    /// `mcfs mount --record` does).
    pub fn for_output(path: &Path, asked: Option<Form>) -> Form {
        asked.unwrap_or(if path.extension().is_some_and(|e| e == BINARY_EXTENSION) { Form::Binary } else { Form::Text })
    }

    pub fn extension(self) -> &'static str {
        match self {
            Form::Text => TEXT_EXTENSION,
            Form::Binary => BINARY_EXTENSION,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Form::Text => "text",
            Form::Binary => "binary",
        }
    }
}

/// Opens `path` for reading, naming it in the error.
pub fn open_input(path: &Path) -> Result<File, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.is_dir() {
        return Err(format!("{}: is a directory, not a trace", path.display()));
    }
    Ok(file)
}

/// A reader that counts the bytes it hands out.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// An mcfs trace being read, text or binary.
pub struct TraceInput {
    path: PathBuf,
    form: Form,
    size: u64,
    consumed: Rc<Cell<u64>>,
    events: Box<dyn Iterator<Item = Result<TraceEvent, TraceError>>>,
}

impl TraceInput {
    pub fn open(path: &Path) -> Result<TraceInput, String> {
        let file = open_input(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let consumed = Rc::new(Cell::new(0));
        let mut input = BufReader::new(Counting { inner: file, count: consumed.clone() });
        let binary = input.fill_buf().map_err(|e| format!("{}: {e}", path.display()))?.starts_with(MAGIC);
        let (form, events): (Form, Box<dyn Iterator<Item = _>>) = if binary {
            (Form::Binary, Box::new(BinaryReader::new(input)))
        } else {
            (Form::Text, Box::new(TextReader::new(input)))
        };
        Ok(TraceInput { path: path.to_path_buf(), form, size, consumed, events })
    }

    pub fn form(&self) -> Form {
        self.form
    }

    /// Size of the file when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes read from the file so far (a buffer ahead of the events handed out).
    pub fn consumed(&self) -> u64 {
        self.consumed.get()
    }
}

impl Iterator for TraceInput {
    /// An event, or the error naming the file and the line or byte offset.
    type Item = Result<TraceEvent, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let path = &self.path;
        self.events.next().map(|r| r.map_err(|e| format!("{}: {e}", path.display())))
    }
}

enum Sink {
    Text(TextWriter<BufWriter<File>>),
    Binary(BinaryWriter<BufWriter<File>>),
}

/// A trace being written to a temporary file, renamed to its name by [`TraceOutput::commit`].
pub struct TraceOutput {
    path: PathBuf,
    temp: PathBuf,
    sink: Option<Sink>,
    events: u64,
}

impl TraceOutput {
    pub fn create(path: &Path, form: Form) -> Result<TraceOutput, String> {
        let fail = |e: io::Error| format!("{}: {e}", path.display());
        let name = path.file_name().ok_or_else(|| format!("{}: not a file name", path.display()))?;
        if path.is_dir() {
            return Err(format!("{}: is a directory", path.display()));
        }
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".partial-{}", std::process::id()));
        let temp = path.with_file_name(temp_name);
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(&temp).map_err(fail)?;
        let out = BufWriter::new(file);
        let mut output = TraceOutput { path: path.to_path_buf(), temp, sink: None, events: 0 };
        output.sink = Some(match form {
            Form::Text => Sink::Text(TextWriter::new(out).map_err(fail)?),
            Form::Binary => Sink::Binary(BinaryWriter::new(out).map_err(fail)?),
        });
        Ok(output)
    }

    pub fn write(&mut self, event: &TraceEvent) -> Result<(), String> {
        let result = match &mut self.sink {
            Some(Sink::Text(w)) => w.write_event(event),
            Some(Sink::Binary(w)) => w.write_event(event),
            None => Ok(()),
        };
        self.events += 1;
        result.map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Flushes everything and gives the file its name; returns the number of events written.
    pub fn commit(mut self) -> Result<u64, String> {
        let fail = |e: io::Error| format!("{}: {e}", self.path.display());
        let out = match self.sink.take() {
            Some(Sink::Text(w)) => w.finish(),
            Some(Sink::Binary(w)) => w.finish(),
            None => return Ok(self.events),
        };
        let file = out.map_err(fail)?.into_inner().map_err(|e| fail(e.into_error()))?;
        file.sync_all().map_err(fail)?;
        std::fs::rename(&self.temp, &self.path).map_err(fail)?;
        Ok(self.events)
    }
}

impl Drop for TraceOutput {
    /// Not committed (an error, or a panic): the partial file goes.
    fn drop(&mut self) {
        if self.sink.is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Writes every event to `path`, all or nothing; stops at the first error (of the input or the output).
pub fn write_trace(
    path: &Path,
    form: Form,
    events: impl IntoIterator<Item = Result<TraceEvent, String>>,
) -> Result<u64, String> {
    let mut output = TraceOutput::create(path, form)?;
    for event in events {
        output.write(&event?)?;
    }
    output.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_sim::EventKind;

    fn event(t: u64) -> TraceEvent {
        TraceEvent { time_ns: t, app: "a".into(), pid: 1, kind: EventKind::Launch }
    }

    #[test]
    fn output_form_follows_the_name_unless_asked() {
        assert_eq!(Form::for_output(Path::new("x.bin"), None), Form::Binary);
        assert_eq!(Form::for_output(Path::new("x.trace"), None), Form::Text);
        assert_eq!(Form::for_output(Path::new("x"), None), Form::Text);
        assert_eq!(Form::for_output(Path::new("x.bin"), Some(Form::Text)), Form::Text);
    }

    #[test]
    fn failed_writes_leave_nothing_and_keep_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        std::fs::write(&path, "old").unwrap();
        let events = vec![Ok(event(1)), Err("input.csv: line 2: bad".to_string()), Ok(event(3))];
        let err = write_trace(&path, Form::Text, events).unwrap_err();
        assert_eq!(err, "input.csv: line 2: bad");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary file left behind");

        assert_eq!(write_trace(&path, Form::Binary, vec![Ok(event(1)), Ok(event(2))]).unwrap(), 2);
        let back: Vec<_> = TraceInput::open(&path).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, vec![event(1), event(2)]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn input_errors_name_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.trace");
        std::fs::write(&path, "mcfs-trace 1\n0 a 1 launch\n1 a 1 write /x\n").unwrap();
        let mut input = TraceInput::open(&path).unwrap();
        assert_eq!(input.form(), Form::Text);
        assert!(input.next().unwrap().is_ok());
        let err = input.next().unwrap().unwrap_err();
        assert!(err.starts_with(&format!("{}: line 3: ", path.display())), "{err}");
        assert_eq!(input.consumed(), input.size());
        assert!(TraceInput::open(dir.path()).is_err());
    }
}
