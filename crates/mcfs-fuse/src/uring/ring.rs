//! One ring queue: an io_uring (SQE128, for the 80-byte command area) on
//! which `depth` entries are registered with `/dev/fuse`, each a header
//! buffer (`fuse_uring_req_header`) and a payload buffer. The kernel fills
//! an entry with a request and completes its command; the queue's thread
//! decodes it, has the handler serve it, and answers with
//! COMMIT_AND_FETCH, which also arms the entry for the next request — one
//! `io_uring_enter` per request, no read or write.
//!
//! An entry is the kernel's while its command is in flight and ours from
//! its completion to its commit. Its answer may come from another thread
//! (a request FastTrack held back): the request's decoded arguments borrow
//! the payload buffer, so an answer is kept in the entry's `Answer` and
//! written to the buffers only by the commit, after the handler returned.
//! Every command is submitted by the queue's thread: the kernel delivers
//! the next request of an entry as task work of the thread that armed it,
//! which must neither exit nor sit in a long system call (a held request's
//! thread may do both). So a late answer (the entry is `Detached`) is put on
//! `late` and the queue's thread woken through an eventfd it keeps a read
//! armed on; it commits. With one submitter the ring is set up
//! SINGLE_ISSUER and DEFER_TASKRUN: the kernel hands a request over when the
//! queue's thread waits for it, with a plain wake-up, instead of
//! interrupting the thread with task work. The ring is made on the queue's
//! thread (SINGLE_ISSUER binds it to the thread that makes it), which alone
//! submits and reads completions.
//!
//! Invariant: only the party `Answer::phase` names touches an entry's
//! buffers: the kernel (`Kernel`), the queue's thread (`Serving`, and when
//! it commits).

use super::abi::{
    FUSE_IO_URING_CMD_COMMIT_AND_FETCH, FUSE_IO_URING_CMD_REGISTER, IN_HEADER_SIZE, OUT_HEADER_SIZE,
    RING_ENT_IN_OUT_OFFSET, RING_HEADER_SIZE, RING_OP_IN_OFFSET, RING_OP_IN_SIZE,
};
use super::reply::{out_header, Reply, Route};
use super::request::{InHeader, Request};
use super::{Counters, Handler};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `io_uring_sqe.len` sits at byte 24; the crate's `UringCmd80` leaves it 0.
const SQE_LEN_OFFSET: usize = 24;

/// `user_data` of the eventfd read that wakes the queue's thread for a late answer.
const WAKE: u64 = u64::MAX;

pub(crate) struct Queue {
    qid: u16,
    dev: Arc<OwnedFd>,
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    entries: Box<[Entry]>,
    /// Entries answered after their handler returned, for the queue's thread to commit.
    late: Mutex<Vec<usize>>,
    /// Written to wake the queue's thread for `late`; it keeps a read armed on it.
    wake: OwnedFd,
    /// Where that read puts the count.
    woken: Box<UnsafeCell<u64>>,
}

// SAFETY: the raw buffers are shared between threads only as the module
// comment says: the one party `Answer::phase` names uses them, and the switch
// from one to the next happens under the entry's `answer` lock.
unsafe impl Send for Queue {}
// SAFETY: as for Send.
unsafe impl Sync for Queue {}

struct Entry {
    /// `fuse_uring_req_header`.
    header: Box<UnsafeCell<[u8; RING_HEADER_SIZE]>>,
    /// The payload buffer: a leaked `Box<[u8]>`, freed on drop.
    payload: *mut u8,
    payload_len: usize,
    /// The two buffers as the REGISTER command hands them over.
    iov: Box<[libc::iovec; 2]>,
    answer: Mutex<Answer>,
}

struct Answer {
    phase: Phase,
    unique: u64,
    error: i32,
    body: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Armed: the kernel may fill it with a request.
    Kernel,
    /// The queue thread serves its request.
    Serving,
    /// Answered; the queue's thread commits it (once the handler returned).
    Answered,
    /// The handler returned without an answer: the answer will come late.
    Detached,
}

impl Entry {
    fn new(payload_len: usize) -> Entry {
        // calloc'ed: the pages are only touched as requests use them.
        let payload = Box::into_raw(vec![0u8; payload_len].into_boxed_slice()).cast::<u8>();
        let header = Box::new(UnsafeCell::new([0u8; RING_HEADER_SIZE]));
        let iov = Box::new([
            libc::iovec { iov_base: header.get().cast(), iov_len: RING_HEADER_SIZE },
            libc::iovec { iov_base: payload.cast(), iov_len: payload_len },
        ]);
        let answer = Mutex::new(Answer { phase: Phase::Kernel, unique: 0, error: 0, body: Vec::new() });
        Entry { header, payload, payload_len, iov, answer }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: `payload` came from Box::into_raw of a boxed slice of `payload_len` bytes, freed once here.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.payload, self.payload_len)) });
    }
}

impl Queue {
    /// Queue `qid` with `depth` entries of `payload_len`-byte payloads; call
    /// on the thread that will serve it (the ring's only submitter).
    pub(crate) fn new(qid: u16, dev: Arc<OwnedFd>, depth: usize, payload_len: usize) -> io::Result<Queue> {
        // Room for every entry's command and the wake-up read.
        let ring = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build((depth + 1).next_power_of_two() as u32)?;
        let entries = (0..depth).map(|_| Entry::new(payload_len)).collect();
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened and owned here alone.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let late = Mutex::new(Vec::new());
        Ok(Queue { qid, dev, ring, entries, late, wake, woken: Box::new(UnsafeCell::new(0)) })
    }

    /// The command for entry `index`: REGISTER its buffers, or COMMIT the answer to `commit_id` and fetch.
    fn command(&self, index: usize, cmd_op: u32, commit_id: u64) -> squeue::Entry128 {
        // fuse_uring_cmd_req: flags, commit_id, qid.
        let mut cmd = [0u8; 80];
        cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
        cmd[16..18].copy_from_slice(&self.qid.to_ne_bytes());
        let fd = types::Fd(self.dev.as_raw_fd());
        let mut sqe = opcode::UringCmd80::new(fd, cmd_op).cmd(cmd);
        if cmd_op == FUSE_IO_URING_CMD_REGISTER {
            sqe = sqe.addr(Some(self.entries[index].iov.as_ptr() as u64));
        }
        let sqe = sqe.build().user_data(index as u64);
        if cmd_op != FUSE_IO_URING_CMD_REGISTER {
            return sqe;
        }
        // SAFETY: Entry128 is repr(C), 128 bytes of plain data (an SQE and its command area).
        let mut raw: [u8; 128] = unsafe { std::mem::transmute(sqe) };
        raw[SQE_LEN_OFFSET..SQE_LEN_OFFSET + 4].copy_from_slice(&2u32.to_ne_bytes());
        // SAFETY: as above, back again.
        unsafe { std::mem::transmute::<[u8; 128], squeue::Entry128>(raw) }
    }

    /// Queues `sqe`, which the queue's thread submits when it next waits.
    /// Called on the queue's thread only.
    fn push(&self, sqe: &squeue::Entry128) -> io::Result<()> {
        // SAFETY: only the queue's thread pushes, so this is the only
        // SubmissionQueue; the buffers the command names live as long as the queue.
        let pushed = unsafe { self.ring.submission_shared().push(sqe) };
        // Cannot fail: the ring has room for a command per entry and the wake-up read.
        pushed.map_err(|_| io::Error::other("FUSE ring submission queue full"))
    }

    /// Arms the read of the wake-up eventfd.
    fn arm_wake(&self) -> io::Result<()> {
        let read = opcode::Read::new(types::Fd(self.wake.as_raw_fd()), self.woken.get().cast(), 8);
        self.push(&read.build().user_data(WAKE).into())
    }

    /// Registers every entry with the kernel and submits; on the queue's thread.
    pub(crate) fn register(&self) -> io::Result<()> {
        for index in 0..self.entries.len() {
            self.push(&self.command(index, FUSE_IO_URING_CMD_REGISTER, 0))?;
        }
        self.arm_wake()?;
        self.ring.submit()?;
        Ok(())
    }

    /// Serves requests until every entry's command has ended (the connection
    /// closed). The first command that failed otherwise is the error.
    pub(crate) fn serve(self: &Arc<Queue>, handler: &dyn Handler, counters: &Counters) -> io::Result<()> {
        let mut live = self.entries.len();
        let mut failure = None;
        let mut done = Vec::with_capacity(self.entries.len());
        while live > 0 {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
            // SAFETY: only this thread reads the completion queue.
            done.extend(unsafe { self.ring.completion_shared() }.map(|cqe| (cqe.user_data(), cqe.result())));
            for (index, result) in done.drain(..) {
                let index = match index {
                    WAKE => {
                        self.arm_wake()?;
                        continue;
                    }
                    index => index as usize,
                };
                if result < 0 {
                    live -= 1;
                    let gone = [libc::ENOTCONN, libc::ECANCELED, libc::ENODEV].contains(&-result);
                    if !gone && failure.is_none() {
                        failure = Some(io::Error::from_raw_os_error(-result));
                    }
                    continue;
                }
                counters.ring.fetch_add(1, Ordering::Relaxed);
                self.serve_entry(index, handler)?;
            }
            let late = std::mem::take(&mut *self.late.lock());
            for index in late {
                self.commit(index, &mut self.entries[index].answer.lock())?;
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Serves the request the kernel put in entry `index`.
    fn serve_entry(self: &Arc<Queue>, index: usize, handler: &dyn Handler) -> io::Result<()> {
        let entry = &self.entries[index];
        entry.answer.lock().phase = Phase::Serving;
        // SAFETY: the entry is ours (Serving): the kernel wrote it before completing its command.
        let header: [u8; RING_HEADER_SIZE] = unsafe { *entry.header.get() };
        let in_out = &header[RING_ENT_IN_OUT_OFFSET..];
        let payload_len = u32::from_ne_bytes([in_out[16], in_out[17], in_out[18], in_out[19]]) as usize;
        // SAFETY: as above; the slice lives until `finish`, before which nobody writes the payload.
        let payload = unsafe { std::slice::from_raw_parts(entry.payload, payload_len.min(entry.payload_len)) };
        let op_in = &header[RING_OP_IN_OFFSET..RING_OP_IN_OFFSET + RING_OP_IN_SIZE];
        match InHeader::parse(&header[..IN_HEADER_SIZE]) {
            Ok(in_header) => {
                let reply = Reply::new(in_header.unique, Route::Ring(Arc::clone(self), index));
                match Request::decode(in_header, op_in, payload) {
                    Ok(request) => super::dispatch(handler, &request, reply),
                    Err(e) => {
                        tracing::warn!("FUSE ring queue {}: {e}", self.qid);
                        reply.error(fuser::Errno::EIO);
                    }
                }
            }
            // Cannot happen (the header area is larger than an in-header); the entry stays ours, unused.
            Err(e) => tracing::error!("FUSE ring queue {}: {e}", self.qid),
        }
        self.finish(index)
    }

    /// The handler of entry `index` returned: commit its answer, or leave the commit to whoever answers.
    fn finish(&self, index: usize) -> io::Result<()> {
        let mut answer = self.entries[index].answer.lock();
        match answer.phase {
            Phase::Answered => self.commit(index, &mut answer),
            _ => {
                answer.phase = Phase::Detached;
                Ok(())
            }
        }
    }

    /// The answer to the request `unique` in entry `index`: `error` and the body `encode` writes.
    pub(crate) fn answer(&self, index: usize, unique: u64, error: i32, encode: impl FnOnce(&mut Vec<u8>)) {
        let mut answer = self.entries[index].answer.lock();
        answer.body.clear();
        encode(&mut answer.body);
        answer.unique = unique;
        answer.error = error;
        match answer.phase {
            Phase::Serving => answer.phase = Phase::Answered,
            Phase::Detached => {
                answer.phase = Phase::Answered;
                self.late.lock().push(index);
                let one = 1u64.to_ne_bytes();
                // SAFETY: an 8-byte buffer that outlives the call.
                if unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) } != 8 {
                    let e = io::Error::last_os_error();
                    tracing::error!("FUSE ring queue {}: cannot wake for request {unique}: {e}", self.qid);
                }
            }
            phase => tracing::error!("FUSE ring queue {}: answer to request {unique} in phase {phase:?}", self.qid),
        }
    }

    /// Writes `answer` to entry `index`'s buffers and commits it; the queue's thread submits it when it next waits.
    fn commit(&self, index: usize, answer: &mut Answer) -> io::Result<()> {
        let entry = &self.entries[index];
        if answer.body.len() > entry.payload_len {
            tracing::error!("FUSE ring queue {}: a {}-byte answer does not fit", self.qid, answer.body.len());
            (answer.error, answer.body) = (-libc::EIO, Vec::new());
        }
        let header = out_header(answer.unique, answer.error, answer.body.len());
        // SAFETY: the entry is ours (its handler returned: Answered, and we hold its lock);
        // the copies stay inside the buffers (the body fits, checked above).
        unsafe {
            let head = entry.header.get().cast::<u8>();
            std::ptr::copy_nonoverlapping(header.as_ptr(), head, OUT_HEADER_SIZE);
            let payload_sz = (answer.body.len() as u32).to_ne_bytes();
            std::ptr::copy_nonoverlapping(payload_sz.as_ptr(), head.add(RING_ENT_IN_OUT_OFFSET + 16), 4);
            std::ptr::copy_nonoverlapping(answer.body.as_ptr(), entry.payload, answer.body.len());
        }
        answer.phase = Phase::Kernel;
        self.push(&self.command(index, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, answer.unique))
    }
}
