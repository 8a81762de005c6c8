//! User input from Linux input devices (`mcfs mount --input-device PATH`,
//! e.g. `/dev/input/event2`). One thread per device reads its `struct
//! input_event` records, groups them into input reports (the events up to
//! a `SYN_REPORT`), keeps the reports that show the user doing something —
//! a key or button press, a touch or pointer movement, not a release — and
//! merges reports a few milliseconds apart (a drag, a swipe, a scroll)
//! into one operation with `BurstFilter` (MobiFS §6.1). `UserInput` hears
//! of each operation as it starts and as it ends (the device was quiet for
//! the burst gap, or stops).
//!
//! Invariants: no byte sequence makes the reader panic, and a record split
//! across reads waits for its rest; devices are opened when the mount
//! starts, so a bad path is reported there with its errno; devices are
//! never grabbed, so the user interface still gets every event.

use crate::user_input::{Gesture, InputOperation};
use mcfs_core::policy::interval::{BurstFilter, DEFAULT_BURST_GAP};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LONG: usize = std::mem::size_of::<libc::c_long>();
/// Size of one `struct input_event`: a `timeval` (two longs), type, code, value.
pub const EVENT_SIZE: usize = std::mem::size_of::<libc::input_event>();
const _: () = assert!(EVENT_SIZE == 2 * LONG + 8, "input_event is a timeval of two longs, two u16 and an i32");

const EV_SYN: u16 = 0x00;
const EV_KEY: u16 = 0x01;
const EV_REL: u16 = 0x02;
const EV_ABS: u16 = 0x03;
const SYN_REPORT: u16 = 0;
/// Multi-touch addressing: says which contact the next events are about.
const ABS_MT_SLOT: u16 = 0x2f;
/// A contact's id; -1 means the finger was lifted.
const ABS_MT_TRACKING_ID: u16 = 0x39;
/// `EV_KEY` values: 0 release, 1 press, 2 autorepeat.
const KEY_PRESS: i32 = 1;

/// Records read at once.
const READ_RECORDS: usize = 128;
/// Longest a watcher sleeps before it looks whether it should stop.
const STOP_POLL: Duration = Duration::from_millis(200);

/// One `struct input_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent {
    /// When the kernel saw it (`CLOCK_REALTIME` unless a program changed the device's clock).
    pub time: SystemTime,
    pub kind: u16,
    pub code: u16,
    pub value: i32,
}

/// Decodes one record of `EVENT_SIZE` bytes (native byte order). Times
/// before the epoch or with a microsecond field out of range are clamped.
pub fn parse_event(record: &[u8; EVENT_SIZE]) -> RawEvent {
    let long_at = |at: usize| -> i64 {
        let mut bytes = [0u8; LONG];
        bytes.copy_from_slice(&record[at..at + LONG]);
        match LONG {
            8 => i64::from_ne_bytes(bytes[..].try_into().unwrap_or_default()),
            _ => i64::from(i32::from_ne_bytes(bytes[..4].try_into().unwrap_or_default())),
        }
    };
    let u16_at = |at: usize| u16::from_ne_bytes([record[at], record[at + 1]]);
    let (seconds, micros) = (long_at(0), long_at(LONG));
    let since_epoch = Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
        + Duration::from_micros(u64::try_from(micros.clamp(0, 999_999)).unwrap_or(0));
    RawEvent {
        time: UNIX_EPOCH.checked_add(since_epoch).unwrap_or(UNIX_EPOCH),
        kind: u16_at(2 * LONG),
        code: u16_at(2 * LONG + 2),
        value: i32::from_ne_bytes([
            record[2 * LONG + 4],
            record[2 * LONG + 5],
            record[2 * LONG + 6],
            record[2 * LONG + 7],
        ]),
    }
}

/// Cuts a byte stream into records, keeping a partial one for the next read.
#[derive(Default)]
pub struct RecordBuffer {
    partial: Vec<u8>,
}

impl RecordBuffer {
    pub fn push(&mut self, mut bytes: &[u8], mut each: impl FnMut(RawEvent)) {
        if !self.partial.is_empty() {
            let take = (EVENT_SIZE - self.partial.len()).min(bytes.len());
            self.partial.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            match <&[u8; EVENT_SIZE]>::try_from(self.partial.as_slice()) {
                Ok(record) => each(parse_event(record)),
                Err(_) => return,
            }
            self.partial.clear();
        }
        let mut records = bytes.chunks_exact(EVENT_SIZE);
        for record in &mut records {
            if let Ok(record) = record.try_into() {
                each(parse_event(record));
            }
        }
        self.partial.extend_from_slice(records.remainder());
    }
}

/// Turns events into user operations: reports that show activity, merged
/// into bursts.
pub struct GestureDetector {
    /// The report being read shows activity.
    active: bool,
    bursts: BurstFilter,
    open: Option<InputOperation>,
}

impl GestureDetector {
    /// Reports less than `gap` apart belong to one operation.
    pub fn new(gap: Duration) -> GestureDetector {
        GestureDetector { active: false, bursts: BurstFilter::new(gap), open: None }
    }

    /// Feeds one event; tells `out` of the operations it starts or ends.
    /// True if it ended a report that shows activity.
    pub fn feed(&mut self, event: &RawEvent, out: &mut impl FnMut(Gesture)) -> bool {
        match (event.kind, event.code) {
            (EV_SYN, SYN_REPORT) => {
                let active = std::mem::take(&mut self.active);
                if active {
                    self.report(event.time, out);
                }
                return active;
            }
            (EV_KEY, _) => self.active |= event.value == KEY_PRESS,
            (EV_REL, _) => self.active = true,
            (EV_ABS, ABS_MT_SLOT) => {}
            (EV_ABS, ABS_MT_TRACKING_ID) => self.active |= event.value >= 0,
            (EV_ABS, _) => self.active = true,
            // SYN_DROPPED (the reader fell behind), scan codes, LEDs, switches...
            _ => {}
        }
        false
    }

    fn report(&mut self, at: SystemTime, out: &mut impl FnMut(Gesture)) {
        let starts = self.bursts.starts_operation(at);
        match &mut self.open {
            Some(operation) if !starts => {
                operation.duration = operation.duration.max(at.duration_since(operation.start).unwrap_or_default());
                operation.reports += 1;
            }
            _ => {
                self.end(out);
                self.open = Some(InputOperation { start: at, duration: Duration::ZERO, reports: 1 });
                out(Gesture::Started);
            }
        }
    }

    /// Ends the operation in progress, if any.
    pub fn end(&mut self, out: &mut impl FnMut(Gesture)) {
        if let Some(operation) = self.open.take() {
            out(Gesture::Ended(operation));
        }
    }

    pub fn in_progress(&self) -> bool {
        self.open.is_some()
    }
}

/// An input device opened for watching.
pub struct InputDevice {
    path: PathBuf,
    file: File,
}

impl InputDevice {
    /// Opens `path` for reading without blocking; the error names the path and the errno.
    pub fn open(path: &Path) -> Result<InputDevice, String> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| format!("input device {}: cannot open: {e}", path.display()))?;
        let meta = file.metadata().map_err(|e| format!("input device {}: {e}", path.display()))?;
        if meta.is_dir() {
            return Err(format!("input device {}: is a directory (os error {})", path.display(), libc::EISDIR));
        }
        Ok(InputDevice { path: path.to_path_buf(), file })
    }
}

/// The watcher threads; `stop` ends them.
pub struct InputWatchers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Starts one watcher thread per device, each telling `on_gesture` of its operations.
pub fn watch(devices: Vec<InputDevice>, on_gesture: Arc<dyn Fn(Gesture) + Send + Sync>) -> io::Result<InputWatchers> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut watchers = InputWatchers { stop: stop.clone(), threads: Vec::new() };
    for device in devices {
        let (stop, on_gesture) = (stop.clone(), on_gesture.clone());
        let spawned = std::thread::Builder::new()
            .name("mcfs-input".into())
            .spawn(move || watch_device(&device, &stop, &*on_gesture));
        match spawned {
            Ok(thread) => watchers.threads.push(thread),
            Err(e) => {
                watchers.stop();
                return Err(e);
            }
        }
    }
    Ok(watchers)
}

impl InputWatchers {
    /// Stops every watcher (each ends its operation in progress) and waits for them.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

fn watch_device(device: &InputDevice, stop: &AtomicBool, on_gesture: &dyn Fn(Gesture)) {
    tracing::info!("watching input device {}", device.path.display());
    let mut emit = |gesture| on_gesture(gesture);
    let mut detector = GestureDetector::new(DEFAULT_BURST_GAP);
    let mut records = RecordBuffer::default();
    let mut buf = vec![0u8; READ_RECORDS * EVENT_SIZE];
    let mut last_report = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let wait =
            if detector.in_progress() { DEFAULT_BURST_GAP.saturating_sub(last_report.elapsed()) } else { STOP_POLL };
        match wait_readable(&device.file, wait) {
            Ok(true) => {}
            Ok(false) => {
                if detector.in_progress() && last_report.elapsed() >= DEFAULT_BURST_GAP {
                    detector.end(&mut emit);
                }
                continue;
            }
            Err(e) => {
                tracing::warn!("input device {}: poll failed: {e}; no longer watched", device.path.display());
                break;
            }
        }
        match (&device.file).read(&mut buf) {
            Ok(0) => {
                tracing::info!("input device {}: end of input; no longer watched", device.path.display());
                break;
            }
            Ok(n) => {
                let mut reported = false;
                records.push(&buf[..n], |event| reported |= detector.feed(&event, &mut emit));
                if reported {
                    last_report = Instant::now();
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) => {
                tracing::warn!("input device {}: {e}; no longer watched", device.path.display());
                break;
            }
        }
    }
    detector.end(&mut emit);
}

/// Waits up to `wait` for `file` to have something to read (or an error or
/// hang-up to report); false on timeout or interruption.
fn wait_readable(file: &File, wait: Duration) -> io::Result<bool> {
    let mut fds = libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let millis = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is one valid pollfd that outlives the call.
    match unsafe { libc::poll(&mut fds, 1, millis) } {
        -1 => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Mutex;

    const BTN_TOUCH: u16 = 0x14a;
    const KEY_A: u16 = 30;
    const ABS_X: u16 = 0;
    const ABS_Y: u16 = 1;
    const REL_X: u16 = 0;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms)
    }

    fn encode(e: &RawEvent) -> Vec<u8> {
        let since = e.time.duration_since(UNIX_EPOCH).unwrap();
        let mut out = Vec::with_capacity(EVENT_SIZE);
        let long = |v: i64, out: &mut Vec<u8>| match LONG {
            8 => out.extend_from_slice(&v.to_ne_bytes()),
            _ => out.extend_from_slice(&(v as i32).to_ne_bytes()),
        };
        long(since.as_secs() as i64, &mut out);
        long(i64::from(since.subsec_micros()), &mut out);
        out.extend_from_slice(&e.kind.to_ne_bytes());
        out.extend_from_slice(&e.code.to_ne_bytes());
        out.extend_from_slice(&e.value.to_ne_bytes());
        out
    }

    fn event(ms: u64, kind: u16, code: u16, value: i32) -> RawEvent {
        RawEvent { time: at(ms), kind, code, value }
    }

    /// A touch-screen report at `ms`: finger down (`down`), moved, or lifted (`lift`).
    fn touch(ms: u64, down: bool, lift: bool) -> Vec<RawEvent> {
        let mut events = vec![event(ms, EV_ABS, ABS_MT_SLOT, 0)];
        if lift {
            events.push(event(ms, EV_ABS, ABS_MT_TRACKING_ID, -1));
            events.push(event(ms, EV_KEY, BTN_TOUCH, 0));
        } else {
            if down {
                events.push(event(ms, EV_ABS, ABS_MT_TRACKING_ID, 7));
                events.push(event(ms, EV_KEY, BTN_TOUCH, 1));
            }
            events.push(event(ms, EV_ABS, ABS_X, 100 + ms as i32));
            events.push(event(ms, EV_ABS, ABS_Y, 200));
        }
        events.push(event(ms, EV_SYN, SYN_REPORT, 0));
        events
    }

    /// A drag from `start` ms: finger down, `moves` movements 10 ms apart, lift.
    fn drag(start: u64, moves: u64) -> Vec<RawEvent> {
        let mut events = touch(start, true, false);
        for i in 1..=moves {
            events.extend(touch(start + 10 * i, false, false));
        }
        events.extend(touch(start + 10 * moves + 10, false, true));
        events
    }

    /// A tap at `ms`: finger down, lifted 80 ms later.
    fn tap(ms: u64) -> Vec<RawEvent> {
        [touch(ms, true, false), touch(ms + 80, false, true)].concat()
    }

    fn detect(events: &[RawEvent]) -> Vec<Gesture> {
        let mut out = Vec::new();
        let mut detector = GestureDetector::new(DEFAULT_BURST_GAP);
        let mut push = |g| out.push(g);
        for e in events {
            detector.feed(e, &mut push);
        }
        detector.end(&mut push);
        out
    }

    fn op(start_ms: u64, duration_ms: u64, reports: u32) -> Gesture {
        Gesture::Ended(InputOperation { start: at(start_ms), duration: Duration::from_millis(duration_ms), reports })
    }

    #[test]
    fn records_round_trip_through_the_parser() {
        let e = RawEvent { time: at(1234), kind: EV_ABS, code: ABS_MT_TRACKING_ID, value: -1 };
        let bytes = encode(&e);
        assert_eq!(bytes.len(), EVENT_SIZE);
        assert_eq!(parse_event(bytes.as_slice().try_into().unwrap()), e);
        let weird = [0xffu8; EVENT_SIZE];
        assert_eq!(parse_event(&weird).time, UNIX_EPOCH, "a negative time is clamped, not a panic");
    }

    #[test]
    fn a_drag_is_one_operation_and_a_tap_with_its_lift_is_another() {
        let events = [drag(0, 30), tap(1000)].concat();
        let got = detect(&events);
        assert_eq!(got, vec![Gesture::Started, op(0, 300, 31), Gesture::Started, op(1000, 0, 1)]);
        match got[1] {
            Gesture::Ended(o) => assert_eq!(o.kind(), mcfs_sim::trace::InputKind::Drag),
            _ => unreachable!(),
        }
        match got[3] {
            Gesture::Ended(o) => assert_eq!(o.kind(), mcfs_sim::trace::InputKind::Tap),
            _ => unreachable!(),
        }
    }

    #[test]
    fn key_presses_count_and_releases_and_repeats_do_not() {
        let key = |ms, value| vec![event(ms, EV_KEY, KEY_A, value), event(ms, EV_SYN, SYN_REPORT, 0)];
        let events = [key(0, 1), key(100, 0), key(600, 2), key(700, 2), key(1000, 1), key(1020, 1)].concat();
        assert_eq!(detect(&events), vec![Gesture::Started, op(0, 0, 1), Gesture::Started, op(1000, 20, 2)]);
        let mouse = [event(5, EV_REL, REL_X, 3), event(5, EV_SYN, SYN_REPORT, 0)];
        assert_eq!(detect(&mouse), vec![Gesture::Started, op(5, 0, 1)]);
        assert_eq!(detect(&[event(0, EV_KEY, KEY_A, 1)]), vec![], "no report without its SYN_REPORT");
    }

    #[test]
    fn records_split_anywhere_give_the_same_operations() {
        let events = [drag(0, 5), tap(500), drag(2000, 3)].concat();
        let bytes: Vec<u8> = events.iter().flat_map(encode).collect();
        let whole = detect(&events);
        for piece in [1, 5, EVENT_SIZE - 1, EVENT_SIZE + 7, 1000] {
            let mut records = RecordBuffer::default();
            let mut parsed = Vec::new();
            for chunk in bytes.chunks(piece) {
                records.push(chunk, |e| parsed.push(e));
            }
            assert_eq!(parsed, events, "pieces of {piece} bytes");
            assert_eq!(detect(&parsed), whole);
        }
    }

    #[test]
    fn any_bytes_parse_without_panicking() {
        let mut records = RecordBuffer::default();
        let mut detector = GestureDetector::new(DEFAULT_BURST_GAP);
        let mut count = 0;
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for chunk in bytes.chunks(37) {
            records.push(chunk, |e| {
                count += 1;
                detector.feed(&e, &mut |_| {});
            });
        }
        assert_eq!(count, bytes.len() / EVENT_SIZE);
    }

    #[test]
    fn a_missing_or_unfit_device_is_named_with_its_errno() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("event9");
        let err = InputDevice::open(&missing).err().unwrap();
        assert!(err.starts_with(&format!("input device {}: cannot open: ", missing.display())), "{err}");
        assert!(err.contains("(os error 2)"), "{err}");
        let err = InputDevice::open(dir.path()).err().unwrap();
        assert!(err.contains("is a directory (os error 21)"), "{err}");
    }

    /// Runs a watcher over `path` (which `feed` fills and closes) until the input ends.
    fn watch_stream(device: InputDevice, feed: impl FnOnce()) -> Vec<Gesture> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let watchers = watch(vec![device], Arc::new(move |g| sink.lock().unwrap().push(g))).unwrap();
        feed();
        // The watcher ends by itself at the end of the input; stop only joins it.
        while !watchers.threads.iter().all(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        watchers.stop();
        Arc::try_unwrap(seen).unwrap().into_inner().unwrap()
    }

    #[test]
    fn a_watcher_reads_a_fifo_until_its_writer_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("events");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "{}", io::Error::last_os_error());
        let device = InputDevice::open(&fifo).unwrap();
        let events = [drag(0, 9), tap(1000)].concat();
        let bytes: Vec<u8> = events.iter().flat_map(encode).collect();
        assert!(bytes.len() <= libc::PIPE_BUF, "one atomic write, so one read sees it all");
        let writer = OpenOptions::new().write(true).open(&fifo).unwrap();
        let got = watch_stream(device, move || {
            (&writer).write_all(&bytes).unwrap();
            drop(writer);
        });
        assert_eq!(got, vec![Gesture::Started, op(0, 90, 10), Gesture::Started, op(1000, 0, 1)]);
    }

    #[test]
    fn a_watcher_reads_a_regular_file_and_ends_what_is_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recorded-events");
        let bytes: Vec<u8> = drag(0, 4).iter().flat_map(encode).collect();
        std::fs::write(&path, bytes).unwrap();
        let got = watch_stream(InputDevice::open(&path).unwrap(), || {});
        assert_eq!(got, vec![Gesture::Started, op(0, 40, 5)]);
    }
}
