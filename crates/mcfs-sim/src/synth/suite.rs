//! The MobiFS evaluation suite (§7.1) as synthetic traces: ten apps, five minutes each, and five users of
//! Facebook. Which profiles stand for which app is argued in docs/SYNTH.md; the paper states the fsync
//! behaviour of three apps (Browser, Facebook, Twitter) and that the others differ in e curve and user.
//!
//! Invariant: every entry has its own fixed seed, so the suite is the same on every run.

use std::time::Duration;

use super::SynthSpec;

/// Length of every suite trace (the paper's users operated each app for five minutes).
pub const SUITE_DURATION: Duration = Duration::from_secs(300);

/// (entry, app package, I/O profile, user profile, seed).
const ENTRIES: [(&str, &str, &str, &str, u64); 15] = [
    ("FB", "com.facebook.katana", "fsync-moderate", "mixed", 101),
    ("PA", "com.pandora.android", "e-flat", "watcher", 102),
    ("AB", "com.rovio.angrybirds", "e-peak", "skimmer", 103),
    ("NF", "com.netflix.mediaclient", "e-flat", "reader", 104),
    ("TT", "com.twitter.android", "fsync-heavy", "scroller", 105),
    ("GM", "com.google.android.apps.maps", "e-peak", "mixed", 106),
    ("CR", "com.citrix.Receiver", "e-plateau", "reader", 107),
    ("FL", "flipboard.app", "fsync-light", "reader", 108),
    ("WB", "com.android.browser", "fsync-light", "mixed", 109),
    ("WC", "com.tencent.mm", "e-plateau", "scroller", 110),
    ("FB-u1", "com.facebook.katana", "fsync-moderate", "skimmer", 201),
    ("FB-u2", "com.facebook.katana", "fsync-moderate", "scroller", 202),
    ("FB-u3", "com.facebook.katana", "fsync-moderate", "mixed", 203),
    ("FB-u4", "com.facebook.katana", "fsync-moderate", "reader", 204),
    ("FB-u5", "com.facebook.katana", "fsync-moderate", "watcher", 205),
];

/// Every suite entry: its name (`TT`, `FB-u3`, ...) and the spec that generates it.
pub fn suite() -> Vec<(String, SynthSpec)> {
    ENTRIES
        .iter()
        .map(|&(entry, app, io, user, seed)| {
            let spec = SynthSpec {
                app: app.to_string(),
                io_profile: io.to_string(),
                user_profile: user.to_string(),
                seed,
                duration: SUITE_DURATION,
            };
            (entry.to_string(), spec)
        })
        .collect()
}
