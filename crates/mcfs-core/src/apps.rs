//! Apps: the owners of data and the unit of policy. A caller's uid picks its
//! app — one named in the config, or `uid:N` made on first sight (Android
//! gives every app its own uid). Each app has its write log's open VCT, its
//! own instance of the transactioning policy, its sync mode and its counters.

use crate::app_metrics::AppMetrics;
use crate::config::{Config, SyncMode, FIRST_APP_UID};
use crate::policy::{self, StalenessLimit, TransactionPolicy};
use crate::types::{Ino, InoHasher};
use crate::vct::{AppId, OpenVct};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::{Duration, SystemTime};

#[derive(Default)]
pub struct AppCounters {
    pub bytes_written: u64,
    pub bytes_flushed: u64,
    pub fsync_absorbed: u64,
    pub fsync_honoured: u64,
    pub vcts_closed: u64,
    pub vcts_committed: u64,
}

pub struct App {
    pub name: String,
    /// Mode set in the config or by `mcfs ctl mode`; `None` follows the default.
    pub mode: Option<SyncMode>,
    pub max_stale_bytes: u64,
    pub max_stale: Duration,
    pub open: OpenVct,
    /// Sync-point mode: a limit closed the app's VCT since its last sync
    /// point (`sync_points::closes_between_sync_points`).
    pub limit_closed_since_sync_point: bool,
    /// Bytes in the app's closed VCTs waiting for a checkpoint (kept by
    /// `State`, so staleness costs no walk of the queue). A change other
    /// than a close (which moves `open.bytes` here) goes through
    /// `Apps::closed_more` or `closed_less`, which keep the total.
    pub closed_bytes: u64,
    /// Decides when `open` closes; per app, as it may learn the app's writes.
    pub policy: Box<dyn TransactionPolicy>,
    pub counters: AppCounters,
    pub metrics: AppMetrics,
    /// A system service (uid below 10000 or listed in `fasttrack.system_apps`): never preempted.
    pub system: bool,
    /// Whether the app is in `Apps::entry_holders`.
    listed: bool,
}

pub struct Apps {
    pub list: Vec<App>,
    /// Every app's `open.bytes + closed_bytes`, summed as they change: the
    /// simulator asks for it after every event (`bytes_at_risk`), and a
    /// replay of many apps would walk them all each time.
    at_risk: u64,
    /// The apps whose open VCT may hold entries (each once): every app an
    /// entry was recorded for (`recording`) since `with_entries` last
    /// found its VCT empty. The engine looks for the earliest staleness
    /// deadline before every call; at most a few apps are writing at a time
    /// of the many a long replay has seen.
    entry_holders: Vec<AppId>,
    /// Looked up on every call: hashed as the inode tables are (never iterated).
    by_uid: HashMap<u32, AppId, BuildHasherDefault<InoHasher>>,
    default_max_stale_bytes: u64,
    default_max_stale: Duration,
    policy_name: String,
    /// Whether the policy may act on an empty VCT (`polled_at_tick`).
    ask_every_app: bool,
    system_apps: Vec<String>,
}

impl Apps {
    pub fn new(config: &Config) -> Apps {
        let mut apps = Apps {
            list: Vec::new(),
            at_risk: 0,
            entry_holders: Vec::new(),
            by_uid: HashMap::default(),
            default_max_stale_bytes: config.max_stale_bytes,
            default_max_stale: crate::config::seconds(config.max_stale_seconds),
            policy_name: config.transaction_policy.clone(),
            ask_every_app: policy::by_name(&config.transaction_policy).is_none_or(|p| p.heeds_empty_vcts()),
            system_apps: config.fasttrack.system_apps.clone(),
        };
        for a in &config.apps {
            let id = apps.add(a.name.clone());
            let app = &mut apps.list[id];
            app.system |= !a.uids.is_empty() && a.uids.iter().all(|u| *u < FIRST_APP_UID);
            app.mode = a.mode;
            app.max_stale_bytes = a.max_stale_bytes.unwrap_or(app.max_stale_bytes);
            if let Some(s) = a.max_stale_seconds {
                app.max_stale = crate::config::seconds(s);
            }
            for uid in &a.uids {
                apps.by_uid.insert(*uid, id);
            }
        }
        apps
    }

    fn add(&mut self, name: String) -> AppId {
        let system = self.system_apps.contains(&name);
        self.list.push(App {
            system,
            name,
            mode: None,
            max_stale_bytes: self.default_max_stale_bytes,
            max_stale: self.default_max_stale,
            open: OpenVct::default(),
            limit_closed_since_sync_point: false,
            closed_bytes: 0,
            // `Config::validate` rejects unknown names; the fallback keeps an
            // unvalidated config from panicking and still bounds staleness.
            policy: policy::by_name(&self.policy_name).unwrap_or_else(|| Box::new(StalenessLimit)),
            counters: AppCounters::default(),
            metrics: AppMetrics::default(),
            listed: false,
        });
        self.list.len() - 1
    }

    /// Records `len` bytes written into page `page` of `ino` in `app`'s
    /// open VCT (`OpenVct::record_write`, whose answer it gives).
    pub fn record_write(&mut self, app: AppId, ino: Ino, page: u64, len: u64, now: SystemTime) -> bool {
        self.at_risk += len;
        self.recording(app).record_write(ino, page, len, now)
    }

    /// `app`'s open VCT, to record an entry in (which sets its
    /// `first_entry_at`): every recording goes through here, so that
    /// `with_entries` knows the app.
    pub fn recording(&mut self, app: AppId) -> &mut OpenVct {
        let a = &mut self.list[app];
        if !a.listed {
            a.listed = true;
            self.entry_holders.push(app);
        }
        &mut a.open
    }

    /// The apps whose open VCT holds entries (`first_entry_at` is set), in
    /// no particular order; apps found empty leave the list.
    pub fn with_entries(&mut self) -> impl Iterator<Item = &App> {
        self.prune_entry_holders();
        self.entry_holders.iter().map(|&app| &self.list[app])
    }

    /// The apps the background step asks their policy about, in id order
    /// (closing VCTs in that order numbers them so): every app, or only
    /// those whose VCT holds entries if the policy says an empty VCT
    /// changes nothing (`TransactionPolicy::heeds_empty_vcts`).
    pub fn polled_at_tick(&mut self) -> Vec<AppId> {
        if self.ask_every_app {
            return (0..self.list.len()).collect();
        }
        self.prune_entry_holders();
        let mut apps = self.entry_holders.clone();
        apps.sort_unstable();
        apps
    }

    /// Drops the listed apps whose VCT holds no entry now.
    fn prune_entry_holders(&mut self) {
        let list = &mut self.list;
        self.entry_holders.retain(|&app| {
            let a = &mut list[app];
            a.listed = a.open.first_entry_at.is_some();
            a.listed
        });
        debug_assert!(self.list.iter().all(|a| a.listed || a.open.first_entry_at.is_none()));
    }

    /// `bytes` of `app`'s closed VCTs joined the queue (again, or grew).
    pub fn closed_more(&mut self, app: AppId, bytes: u64) {
        self.list[app].closed_bytes += bytes;
        self.at_risk += bytes;
    }

    /// `bytes` of `app`'s closed VCTs left the queue (for a checkpoint).
    pub fn closed_less(&mut self, app: AppId, bytes: u64) {
        self.list[app].closed_bytes -= bytes;
        self.at_risk -= bytes;
    }

    /// Bytes written by all apps and not committed yet: the sum over apps
    /// of `checkpoint::stale_bytes`.
    pub fn bytes_at_risk(&self) -> u64 {
        debug_assert_eq!(self.at_risk, self.list.iter().map(|a| a.open.bytes + a.closed_bytes).sum::<u64>());
        self.at_risk
    }

    /// The app of a uid, made on first sight.
    pub fn of_uid(&mut self, uid: u32) -> AppId {
        if let Some(id) = self.by_uid.get(&uid) {
            return *id;
        }
        let id = self.add(crate::config::uid_app_name(uid));
        self.list[id].system |= uid < FIRST_APP_UID;
        self.by_uid.insert(uid, id);
        id
    }

    /// An app by its name (`uid:N` names the app of a uid).
    pub fn by_name(&mut self, name: &str) -> Option<AppId> {
        if let Some(id) = self.list.iter().position(|a| a.name == name) {
            return Some(id);
        }
        let uid = name.strip_prefix("uid:")?.parse().ok()?;
        Some(self.of_uid(uid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Limits;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn every_app_gets_its_own_policy_instance() {
        let config = Config { transaction_policy: "tpl".to_string(), ..Config::default() };
        let mut apps = Apps::new(&config);
        let (a, b) = (apps.of_uid(10001), apps.of_uid(10002));
        let limits = Limits { max_stale_bytes: 1 << 40, max_stale: Duration::from_secs(3600) };
        let now = UNIX_EPOCH + Duration::from_secs(1);
        // App a's e curve rises (rewrites of one page); app b's only falls.
        let mut closes = |app: AppId, page: u64| {
            let App { open, policy, .. } = &mut apps.list[app];
            open.record_write(1, page, 4096, now);
            policy.should_close(open, &limits, now)
        };
        // TPL samples every 16 pages: 400 rewrites give a's curve a long rise.
        for _ in 0..400 {
            assert!(!closes(a, 0));
        }
        for page in 1..=400 {
            assert!(!closes(b, page), "b's policy must not see a's rise");
        }
        assert!((1..=200).any(|page| closes(a, page)), "a's own curve peaked");
    }

    #[test]
    fn an_unknown_policy_name_still_bounds_staleness() {
        let config = Config { transaction_policy: "no-such-policy".to_string(), ..Config::default() };
        let mut apps = Apps::new(&config);
        let app = apps.of_uid(10001);
        let App { open, policy, max_stale_bytes, max_stale, .. } = &mut apps.list[app];
        let limits = Limits { max_stale_bytes: *max_stale_bytes, max_stale: *max_stale };
        let t0 = UNIX_EPOCH + Duration::from_secs(1);
        open.record_write(1, 0, 4096, t0);
        assert!(policy.should_close(open, &limits, t0 + *max_stale));
    }

    /// The background step asks only the apps holding entries, in id
    /// order, when the policy says an empty VCT changes nothing; every app
    /// when it may (`fixed-interval` starts its periods on any ask).
    #[test]
    fn the_apps_to_ask_are_the_writers_in_id_order_unless_the_policy_heeds_empty_vcts() {
        let now = UNIX_EPOCH + Duration::from_secs(1);
        for (policy, every) in [("staleness-limit", false), ("tpl", false), ("fixed-interval", true)] {
            let config = Config { transaction_policy: policy.to_string(), ..Config::default() };
            let mut apps = Apps::new(&config);
            let ids: Vec<AppId> = (0..5).map(|uid| apps.of_uid(10001 + uid)).collect();
            apps.record_write(ids[3], 1, 0, 4096, now);
            apps.record_write(ids[1], 2, 0, 4096, now);
            let want = if every { ids.clone() } else { vec![ids[1], ids[3]] };
            assert_eq!(apps.polled_at_tick(), want, "{policy}");
            // App 3's VCT empties (closed): it leaves the writers.
            apps.list[ids[3]].open = OpenVct::default();
            let want = if every { ids.clone() } else { vec![ids[1]] };
            assert_eq!(apps.polled_at_tick(), want, "{policy}, after app 3's VCT closed");
        }
    }
}
