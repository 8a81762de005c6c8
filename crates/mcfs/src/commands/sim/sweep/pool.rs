//! Runs a job for every item on `jobs` threads and hands each result, as it comes, to the calling thread.
//!
//! Invariant: every item is worked on exactly once; the order results arrive in depends on the threads,
//! so callers must not let it show in what they write (the sweep sorts its table by key).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Calls `work` on each of `items` on up to `jobs` threads (at least one), and `done` on the calling
/// thread with each item's index and result as they finish.
pub fn for_each<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    mut done: impl FnMut(usize, R),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if tx.send((i, work(item))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, result) in rx {
            done(i, result);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_on_any_number_of_threads() {
        let items: Vec<u64> = (0..50).collect();
        for jobs in [0, 1, 3, 64] {
            let mut seen = vec![0u32; items.len()];
            for_each(
                &items,
                jobs,
                |n| n * n,
                |i, square| {
                    assert_eq!(square, items[i] * items[i]);
                    seen[i] += 1;
                },
            );
            assert!(seen.iter().all(|&n| n == 1), "jobs {jobs}: {seen:?}");
        }
        for_each(&[] as &[u64], 4, |n| *n, |_, _| panic!("no items, no results"));
    }
}
