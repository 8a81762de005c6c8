//! The cache against a simple model, FastTrack's reclaim order, and how a
//! second tier and another policy plug in.

use super::dram::Dram;
use super::replacement::Lru;
use super::*;
use std::collections::BTreeSet;

const FG: AppId = 1;
const BG: AppId = 2;
const OTHER_BG: AppId = 3;

fn page(byte: u8) -> NewPage<'static> {
    NewPage::Owned(std::sync::Arc::new([byte; PAGE_SIZE as usize]))
}

fn cache_of(replacement: &str, limit_pages: u64) -> Cache {
    let tiers: Vec<Box<dyn Tier>> = vec![Box::new(Dram::new(0, limit_pages * PAGE_SIZE, None))];
    Cache::with(tiers, replacement::by_name(replacement).unwrap(), placement::by_name("dram").unwrap())
}

fn cache() -> Cache {
    cache_of("fasttrack+lru", 1 << 20)
}

fn evict(ino: Ino, idx: u64) -> Victim {
    Victim::Evict(PageKey { ino, idx })
}

/// Takes victims until reclaim would need a checkpoint; returns them in order.
fn drain(cache: &mut Cache, spared: Option<AppId>) -> Vec<(Ino, u64)> {
    let mut taken = Vec::new();
    while let Victim::Evict(page) = cache.victim(spared, false) {
        assert!(cache.evict(page));
        taken.push((page.ino, page.idx));
    }
    taken
}

/// What the cache must do, kept the simplest way: each page with its
/// owner, pins, last use and content, and each version a closed VCT holds.
#[derive(Default)]
struct Model {
    pages: BTreeMap<(Ino, u64), ModelPage>,
    uses: u64,
    /// Content generations: each write makes a new one.
    gens: u64,
    /// Page ids, given as the cache gives them: one per page inserted.
    ids: u64,
}

struct ModelPage {
    id: u64,
    owner: AppId,
    pins: u32,
    last_use: u64,
    byte: u8,
    gen: u64,
}

/// A version a closed VCT holds, with what it must read.
struct Held {
    ino: Ino,
    idx: u64,
    id: u64,
    version: PageVersion,
    byte: u8,
    gen: u64,
}

impl Model {
    fn used(&mut self, key: (Ino, u64), owner: AppId) -> Option<&mut ModelPage> {
        self.uses += 1;
        let uses = self.uses;
        let page = self.pages.get_mut(&key)?;
        (page.owner, page.last_use) = (owner, uses);
        Some(page)
    }

    /// FastTrack's order over LRU (docs/ENGINE.md), by brute force.
    fn victim(&self, spared: Option<AppId>, past_background_dirty: bool) -> Victim {
        let oldest = |eligible: &dyn Fn(AppId) -> bool| {
            let clean = self.pages.iter().filter(|(_, p)| p.pins == 0 && eligible(p.owner));
            clean.min_by_key(|(_, p)| p.last_use).map(|(&(ino, idx), _)| evict(ino, idx))
        };
        let all = Victim::Checkpoint(Scope::All);
        let Some(fg) = spared else { return oldest(&|_| true).unwrap_or(all) };
        if let Some(victim) = oldest(&|app| app != fg) {
            return victim;
        }
        if !past_background_dirty && self.pages.values().any(|p| p.owner != fg && p.pins > 0) {
            return Victim::Checkpoint(Scope::Background);
        }
        oldest(&|app| app == fg).unwrap_or(all)
    }

    /// Live pages plus the versions only closed VCTs hold, in pages.
    fn pages_held(&self, held: &[Held]) -> u64 {
        let live_gens: BTreeSet<u64> = self.pages.values().map(|p| p.gen).collect();
        let kept: BTreeSet<u64> = held.iter().map(|h| h.gen).filter(|g| !live_gens.contains(g)).collect();
        self.pages.len() as u64 + kept.len() as u64
    }
}

const LIMIT: u64 = 20;
/// More pages than the limit and one fill, so the invariant on clean pages can break.
const PAGES_PER_FILE: u64 = 32;

/// Reclaim for `wanted` pages with `(spared, past_background_dirty)`, in
/// the cache and the model: the same pages go, the same answer comes, and
/// room made is room under the limit.
fn reclaim_both(
    cache: &mut Cache,
    model: &mut Model,
    closed: &[Held],
    wanted: u64,
    (spared, past): (Option<AppId>, bool),
    at: &str,
) {
    let expected = loop {
        if model.pages_held(closed) + wanted <= LIMIT {
            break Reclaim::Made;
        }
        match model.victim(spared, past) {
            Victim::Evict(p) => model.pages.remove(&(p.ino, p.idx)),
            Victim::Checkpoint(scope) => break Reclaim::Checkpoint(scope),
            Victim::Demote(_) => unreachable!("DRAM only"),
        };
    };
    assert_eq!(cache.reclaim(wanted, Source::Backing, spared, past), expected, "{at}: reclaim");
    if expected == Reclaim::Made {
        assert!(cache.bytes() + wanted * PAGE_SIZE <= LIMIT * PAGE_SIZE, "{at}: the limit");
    }
}

/// Random fills, reads and writes by three apps, pins, closes (a frozen
/// version) and commits, truncations and reclaim (with and without a spared
/// app) over three files, against `Model`: every read, every version, the
/// byte counts and every reclaim decision match, and the invariants hold
/// after every step (fills and commits reclaim as the engine's do, so
/// clean pages stay within the limit and one fill). Seed: `MCFS_SEED`.
#[test]
fn random_operations_match_the_model_and_keep_the_invariants() {
    use rand::{Rng, SeedableRng};
    let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("seed {seed} (MCFS_SEED={seed} replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut cache = cache_of("fasttrack+lru", LIMIT);
    let mut model = Model::default();
    // Pins of the open VCT (page, id) and the versions closed VCTs hold.
    let mut open: Vec<(Ino, u64, u64)> = Vec::new();
    let mut closed: Vec<Held> = Vec::new();
    for step in 0..3000 {
        let (ino, idx, app) = (rng.gen_range(1..=3), rng.gen_range(0..PAGES_PER_FILE), rng.gen_range(1..=3));
        let key = (ino, idx);
        let byte: u8 = rng.gen();
        let at = format!("step {step} (seed {seed})");
        match rng.gen_range(0..9) {
            // A fill, as the engine makes one: room first, the foreground
            // app's own fill past background dirty pages.
            0 => {
                let spared = rng.gen_bool(0.7).then_some(rng.gen_range(1..=3));
                reclaim_both(&mut cache, &mut model, &closed, 1, (spared, spared == Some(app)), &at);
                if !model.pages.contains_key(&key) {
                    (model.uses, model.gens, model.ids) = (model.uses + 1, model.gens + 1, model.ids + 1);
                    let (id, last_use, gen) = (model.ids, model.uses, model.gens);
                    model.pages.insert(key, ModelPage { id, owner: app, pins: 0, last_use, byte, gen });
                }
                cache.insert(ino, idx, page(byte), app, Source::Backing);
            }
            1 => {
                let expected = model.used(key, app).map(|p| p.byte);
                assert_eq!(cache.read(ino, idx, app).map(|b| b[0]), expected, "{at}: read {ino}:{idx}");
            }
            2 => {
                let pin = rng.gen_bool(0.5);
                model.gens += 1;
                let gen = model.gens;
                let id = model.used(key, app).map(|p| {
                    (p.byte, p.gen, p.pins) = (byte, gen, p.pins + u32::from(pin));
                    p.id
                });
                let written = cache.write(ino, idx, app, 0, &[byte; PAGE_SIZE as usize], || pin);
                assert_eq!(written, id.is_some(), "{at}: write {ino}:{idx}");
                if let Some(id) = id.filter(|_| pin) {
                    open.push((ino, idx, id));
                }
            }
            // Close: a pinned page's version goes to a closed VCT, which keeps the pin.
            3 if !open.is_empty() => {
                let (ino, idx, id) = open.swap_remove(rng.gen_range(0..open.len()));
                // A page that went (truncated) since takes its pins with it.
                if let Some(p) = model.pages.get(&(ino, idx)).filter(|p| p.id == id) {
                    let (frozen, version) = cache.freeze(ino, idx).expect("present");
                    assert_eq!(frozen, id, "{at}: id of {ino}:{idx}");
                    closed.push(Held { ino, idx, id, version, byte: p.byte, gen: p.gen });
                }
            }
            // Commit: the version reads as it was closed; the pin goes.
            4 if !closed.is_empty() => {
                let held = closed.swap_remove(rng.gen_range(0..closed.len()));
                assert_eq!(
                    held.version.content(),
                    VersionContent::Bytes(&[held.byte; PAGE_SIZE as usize]),
                    "{at}: version of {}:{}",
                    held.ino,
                    held.idx
                );
                cache.release(held.version);
                cache.unpin(held.ino, held.idx, held.id);
                if let Some(p) = model.pages.get_mut(&(held.ino, held.idx)).filter(|p| p.id == held.id) {
                    p.pins -= 1;
                }
                // What the commit made clean goes as far as the cache is over its limit.
                let spared = rng.gen_bool(0.7).then_some(app);
                reclaim_both(&mut cache, &mut model, &closed, 0, (spared, true), &at);
            }
            5 => {
                let from = rng.gen_range(0..PAGES_PER_FILE);
                model.pages.retain(|&(i, x), _| i != ino || x < from);
                cache.remove_from(ino, from);
            }
            6 => {
                let spared = rng.gen_bool(0.7).then_some(app);
                let past = rng.gen_bool(0.5);
                assert_eq!(cache.victim(spared, past), model.victim(spared, past), "{at}: victim");
            }
            7 => {
                let ask = (rng.gen_bool(0.7).then_some(app), rng.gen_bool(0.5));
                reclaim_both(&mut cache, &mut model, &closed, rng.gen_range(0..4), ask, &at);
            }
            _ => {
                // A page's first pin for the open VCT, without a use.
                let expected = model.pages.get_mut(&key).map(|p| {
                    p.pins += 1;
                    p.id
                });
                assert_eq!(cache.pin(ino, idx), expected, "{at}: pin {ino}:{idx}");
                open.extend(expected.map(|id| (ino, idx, id)));
            }
        }
        if let Err(broken) = cache.check_invariants() {
            panic!("{at}: {broken}");
        }
        assert_eq!(cache.bytes(), model.pages_held(&closed) * PAGE_SIZE, "{at}: bytes");
        let pinned = model.pages.values().filter(|p| p.pins > 0).count() as u64;
        assert_eq!(cache.bytes() - cache.dirty_bytes(), (model.pages.len() as u64 - pinned) * PAGE_SIZE, "{at}");
    }
}

#[test]
fn a_page_put_in_or_taken_from_the_table_behind_the_cache_breaks_the_invariants() {
    let mut cache = cache();
    cache.insert(1, 0, page(0), FG, Source::Backing);
    assert_eq!(cache.check_invariants(), Ok(()));
    let slot = cache.tiers[0].store(page(1), PAGE_SIZE);
    let stray = Entry { tier: 0, slot, id: 99, pins: 0, owner: FG, sharers: AppSet(1 << FG), meta: 99 };
    cache.pages.get_mut(&1).unwrap().insert(1, stray);
    assert_eq!(cache.check_invariants(), Err("clean page 1:1 is not in app 1's reclaim list".to_string()));
    cache.pages.get_mut(&1).unwrap().clear();
    assert_eq!(cache.check_invariants(), Err("inode 1 has an empty page map".to_string()));
    cache.pages.clear();
    assert!(cache.check_invariants().unwrap_err().contains("the cache counts 1 pages"));
}

#[test]
fn pinned_pages_are_not_reclaimable_and_an_unpinned_page_keeps_its_place() {
    let mut cache = cache();
    for idx in 0..3 {
        cache.insert(5, idx, page(0), FG, Source::Backing);
    }
    cache.read(5, 0, FG);
    assert_eq!(cache.victim(None, false), evict(5, 1));
    let id = cache.pin(5, 1).unwrap();
    assert_eq!(cache.victim(None, false), evict(5, 2));
    assert_eq!(cache.dirty_bytes(), PAGE_SIZE);
    cache.unpin(5, 1, id);
    assert_eq!(cache.dirty_bytes(), 0);
    assert!(cache.evict(PageKey { ino: 5, idx: 2 }));
    assert_eq!(cache.bytes(), 2 * PAGE_SIZE);
    assert_eq!(cache.victim(None, false), evict(5, 1), "an unpinned page keeps its place");
}

#[test]
fn a_write_to_a_page_not_cached_neither_pins_nor_logs() {
    let mut cache = cache();
    assert!(!cache.write(1, 0, FG, 0, &[9], || panic!("the write was logged, but its page is not cached")));
    assert_eq!((cache.bytes(), cache.pinned), (0, 0));
}

#[test]
fn writing_a_frozen_page_copies_it() {
    let mut cache = cache();
    cache.insert(1, 0, page(7), FG, Source::Backing);
    let (_, version) = cache.freeze(1, 0).unwrap();
    assert!(cache.write(1, 0, FG, 0, &[9], || true));
    assert_eq!(
        (version.content(), cache.read(1, 0, FG).unwrap()[0]),
        (VersionContent::Bytes(&[7; PAGE_SIZE as usize]), 9),
        "the closed VCT keeps its version"
    );
    assert_eq!((cache.bytes(), cache.dirty_bytes()), (2 * PAGE_SIZE, 2 * PAGE_SIZE));
    cache.release(version);
    assert!(cache.write(1, 0, FG, 1, &[9], || false));
    assert_eq!(cache.bytes(), PAGE_SIZE, "an unshared page is written in place");
}

#[test]
fn truncation_forgets_dirty_and_clean_pages() {
    let mut cache = cache();
    for idx in 0..4 {
        cache.insert(1, idx, page(1), BG, Source::Backing);
    }
    cache.pin(1, 3);
    cache.remove_from(1, 2);
    assert_eq!((cache.bytes(), cache.dirty_bytes()), (2 * PAGE_SIZE, 0));
    assert_eq!(cache.victim(Some(FG), false), evict(1, 0));
    cache.remove_range(1, 0..1);
    assert_eq!(cache.victim(Some(FG), false), evict(1, 1), "the range's end stays");
    cache.remove_from(1, 0);
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::All), "no dirty page is left behind");
    assert_eq!(cache.files().count(), 0);
}

/// The foreground app's pages were used first (least recent), then two
/// background apps read: FastTrack takes every background page first,
/// oldest first across the background apps; plain LRU takes the
/// foreground app's pages first.
#[test]
fn background_clean_pages_go_before_older_foreground_ones() {
    let mut cache = cache();
    for (ino, idx, owner) in [(1, 0, FG), (1, 1, FG), (2, 0, BG), (3, 0, OTHER_BG), (2, 1, BG)] {
        cache.insert(ino, idx, page(0), owner, Source::Backing);
    }
    assert_eq!(cache.victim(None, false), evict(1, 0), "plain LRU");
    assert_eq!(drain(&mut cache, Some(FG)), vec![(2, 0), (3, 0), (2, 1), (1, 0), (1, 1)]);
    assert_eq!(cache.bytes(), 0);
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::All));
}

#[test]
fn background_dirty_pages_come_before_foreground_clean_ones() {
    let mut cache = cache();
    cache.insert(1, 0, page(0), FG, Source::Backing);
    cache.insert(2, 0, page(0), BG, Source::Backing);
    let id = cache.pin(2, 0).unwrap();
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::Background));
    assert_eq!(cache.victim(Some(FG), true), evict(1, 0), "a caller that cannot checkpoint goes on");
    assert_eq!(cache.victim(None, false), evict(1, 0), "without a spared app only cleanliness counts");
    cache.unpin(2, 0, id);
    assert_eq!(cache.victim(Some(FG), false), evict(2, 0), "committed: clean background page");
    cache.pin(2, 0);
    cache.pin(1, 0);
    assert_eq!(
        cache.victim(Some(FG), true),
        Victim::Checkpoint(Scope::All),
        "the foreground app's dirty pages go last"
    );
}

#[test]
fn a_used_page_stays_and_belongs_to_its_last_user() {
    let mut cache = cache();
    for idx in 0..3 {
        cache.insert(1, idx, page(0), FG, Source::Backing);
    }
    cache.insert(2, 0, page(0), BG, Source::Backing);
    cache.read(1, 0, FG);
    // A background app reads the foreground app's page 1: it is background data now.
    cache.read(1, 1, BG);
    assert_eq!(drain(&mut cache, Some(FG)), vec![(2, 0), (1, 1), (1, 2), (1, 0)], "the used foreground page goes last");

    // The same for a dirty page: its dirt moves with it.
    cache.insert(1, 5, page(0), FG, Source::Write);
    cache.pin(1, 5);
    cache.insert(1, 6, page(0), FG, Source::Write);
    assert_eq!(cache.victim(Some(FG), false), evict(1, 6));
    cache.write(1, 5, BG, 0, &[], || false);
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::Background));
    assert_eq!(cache.usage[BG], AppUsage { clean: 0, pinned: 1 });
    cache.remove_from(1, 0);
    assert_eq!((cache.bytes(), cache.dirty_bytes()), (0, 0));
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::All), "per-app counts went back to zero");
}

#[test]
fn plain_lru_ignores_the_spared_app() {
    let mut cache = cache_of("lru", 1 << 20);
    cache.insert(1, 0, page(0), FG, Source::Backing);
    cache.insert(2, 0, page(0), BG, Source::Backing);
    cache.pin(2, 0);
    assert_eq!(cache.victim(Some(FG), false), evict(1, 0));
    cache.pin(1, 0);
    assert_eq!(cache.victim(Some(FG), false), Victim::Checkpoint(Scope::All));
}

/// Reclaim stops once the pages asked for fit; a checkpoint-first answer
/// leaves the cache over its limit rather than drop dirty data.
#[test]
fn reclaim_makes_room_in_the_limit_or_says_which_checkpoint_would() {
    let mut cache = cache_of("fasttrack+lru", 4);
    for idx in 0..4 {
        cache.insert(1, idx, page(0), if idx < 2 { FG } else { BG }, Source::Backing);
    }
    assert_eq!(cache.reclaim(1, Source::Backing, Some(FG), false), Reclaim::Made);
    assert_eq!((cache.contains(1, 2), cache.bytes()), (false, 3 * PAGE_SIZE), "the background page went");
    cache.pin(1, 3);
    assert_eq!(cache.reclaim(2, Source::Write, Some(FG), false), Reclaim::Checkpoint(Scope::Background));
    assert_eq!(cache.reclaim(2, Source::Write, Some(FG), true), Reclaim::Made);
    assert_eq!(cache.bytes(), 2 * PAGE_SIZE);
    cache.pin(1, 1);
    assert_eq!(cache.reclaim(3, Source::Write, Some(FG), true), Reclaim::Checkpoint(Scope::All));
    assert_eq!(cache.bytes(), 2 * PAGE_SIZE, "dirty pages stay");
}

/// A policy that demotes where LRU would evict: how a second tier plugs in.
#[derive(Default)]
struct DemotingLru(Lru);

impl ReplacementPolicy for DemotingLru {
    fn on_insert(&mut self, page: PageKey, owner: AppId, tick: u64, meta: &mut u64) {
        self.0.on_insert(page, owner, tick, meta)
    }
    fn on_access(&mut self, page: PageKey, before: AppId, owner: AppId, pinned: bool, tick: u64, meta: &mut u64) {
        self.0.on_access(page, before, owner, pinned, tick, meta)
    }
    fn on_pin(&mut self, page: PageKey, owner: AppId, meta: &mut u64) {
        self.0.on_pin(page, owner, meta)
    }
    fn on_unpin(&mut self, page: PageKey, owner: AppId, meta: &mut u64) {
        self.0.on_unpin(page, owner, meta)
    }
    fn on_remove(&mut self, page: PageKey, owner: AppId, pinned: bool, meta: u64) {
        self.0.on_remove(page, owner, pinned, meta)
    }
    fn victim(&mut self, ask: &Ask) -> Victim {
        match self.0.victim(ask) {
            Victim::Evict(page) => Victim::Demote(page),
            other => other,
        }
    }
    fn first(&mut self) -> Option<(PageKey, u64)> {
        self.0.first()
    }
    fn lists(&self, page: PageKey, owner: AppId, meta: u64) -> bool {
        self.0.lists(page, owner, meta)
    }
    fn listed(&self) -> u64 {
        self.0.listed()
    }
}

/// Fills and writes go to tier 0, demotions from 0 to 1, from 1 out.
struct TwoLevels;

impl PlacementPolicy for TwoLevels {
    fn fill(&self) -> TierId {
        0
    }
    fn write(&self) -> TierId {
        0
    }
    fn demote(&self, from: TierId) -> Option<TierId> {
        (from == 0).then_some(1)
    }
}

#[test]
fn a_demoted_page_moves_to_the_next_tier_with_its_bytes_and_place() {
    let tiers: Vec<Box<dyn Tier>> =
        vec![Box::new(Dram::new(0, 2 * PAGE_SIZE, None)), Box::new(Dram::new(1, PAGE_SIZE, None))];
    let mut cache = Cache::with(tiers, Box::new(DemotingLru::default()), Box::new(TwoLevels));
    cache.insert(1, 0, page(1), FG, Source::Backing);
    cache.insert(1, 1, page(2), FG, Source::Backing);
    assert_eq!(cache.reclaim(1, Source::Backing, None, false), Reclaim::Made);
    assert_eq!(cache.pages[&1][&0].tier, 1, "the least recently used page went down a tier");
    assert_eq!((cache.tiers[0].used_bytes(), cache.tiers[1].used_bytes()), (PAGE_SIZE, PAGE_SIZE));
    assert_eq!(cache.read(1, 0, FG).map(|b| b[0]), Some(1));
    assert_eq!(cache.check_invariants(), Ok(()));
    // The read made page 1 the least recently used: it goes down too, past
    // tier 1's capacity (only fills and writes make room in a tier).
    cache.insert(1, 2, page(3), FG, Source::Backing);
    assert_eq!(cache.reclaim(1, Source::Backing, None, false), Reclaim::Made);
    assert_eq!((cache.pages[&1][&0].tier, cache.pages[&1][&1].tier, cache.pages[&1][&2].tier), (1, 1, 0));
    assert_eq!(cache.check_invariants(), Ok(()));
}

/// Clean pages past the capacity and one fill: pages came in without the
/// reclaim the engine runs first (or became clean without the one after a commit).
#[test]
fn clean_pages_past_the_limit_and_one_fill_break_the_invariants() {
    let mut cache = cache_of("lru", 4);
    for idx in 0..4 + MAX_FILL_PAGES {
        cache.insert(1, idx, page(0), FG, Source::Backing);
    }
    assert_eq!(cache.check_invariants(), Ok(()), "one fill over");
    cache.insert(1, 99, page(0), FG, Source::Backing);
    assert_eq!(
        cache.check_invariants(),
        Err("151552 bytes of clean pages, more than the capacity (16384 bytes) and one fill".to_string())
    );
    assert_eq!(cache.reclaim(0, Source::Backing, None, false), Reclaim::Made);
    assert_eq!((cache.bytes(), cache.check_invariants()), (4 * PAGE_SIZE, Ok(())));
}
