//! Replaying `link` (trace format version 2): git's write-temp, link, unlink pattern keeps its data, and the
//! second name behaves as the file.

use mcfs_core::Config;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer};
use mcfs_sim::text::TextReader;

fn replay(text: &str) -> Metrics {
    let events = TextReader::new(text.as_bytes());
    Replayer::run(ReplayOptions { config: Config::default(), ..ReplayOptions::default() }, events).expect("replays")
}

/// git writes an object to a temporary name, links it to its final name and unlinks the temporary one.
fn git_object(link: &str) -> String {
    format!(
        "mcfs-trace 2\n\
         0 git 1 create /repo/.git/objects/tmp_obj\n\
         0.1 git 1 write /repo/.git/objects/tmp_obj 0 65536\n\
         0.2 git 1 close /repo/.git/objects/tmp_obj\n\
         {link}\
         0.4 git 1 unlink /repo/.git/objects/tmp_obj\n\
         0.5 git 1 open /repo/.git/objects/ab/cdef\n\
         0.6 git 1 read /repo/.git/objects/ab/cdef 0 65536\n"
    )
}

#[test]
fn linked_data_survives_the_unlink_of_its_first_name() {
    let linked = replay(&git_object("0.3 git 1 link /repo/.git/objects/tmp_obj /repo/.git/objects/ab/cdef\n"));
    assert_eq!(linked.events_skipped, 0, "{linked:#?}");
    assert_eq!(linked.replayed_by_kind.get("link"), Some(&1));
    assert!(linked.bytes_flushed >= 65536, "the object reaches the store: {linked:#?}");

    // Without the link the object is gone before anything commits it, and its later reads have no file.
    let unlinked = replay(&git_object(""));
    assert_eq!(unlinked.skip_reasons.get("unknown path"), Some(&2), "{unlinked:#?}");
    assert!(unlinked.bytes_flushed < linked.bytes_flushed, "{unlinked:#?}");
}

#[test]
fn link_to_an_existing_name_or_from_nothing_is_skipped() {
    let m = replay(
        "mcfs-trace 2\n\
         0 a 1 create /x\n\
         1 a 1 create /y\n\
         2 a 1 link /x /y\n\
         3 a 1 link /nothing /z\n\
         4 a 1 mkdir /d\n\
         5 a 1 link /d /e\n",
    );
    assert_eq!(m.events_replayed, 3, "{m:#?}");
    assert_eq!(m.skipped_by_kind.get("link"), Some(&3), "{m:#?}");
    assert_eq!(m.skip_reasons.get("unknown path"), Some(&1), "{m:#?}");
}
