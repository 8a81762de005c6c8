//! The device model's energy and the profiles against hand-computed figures: batches, flush costs, tails
//! and standby wake-ups on a device with round figures (`fixtures/round.toml`), every built-in profile's
//! published figures reproduced through the model, and the errors of bad profiles.

use mcfs_device::{Device, DeviceProfile, EnergyReport, Request};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn round() -> DeviceProfile {
    DeviceProfile::from_toml(include_str!("fixtures/round.toml")).expect("round profile parses")
}

#[test]
fn energy_of_a_hand_built_sequence_with_tails_and_wakeups() {
    let mut d = Device::new(round());
    // Batch 1 at 0, from standby (the device starts there): a wake-up (5000 nJ), 1000 B written
    // (2000 nJ) and a flush (1000 nJ); done at 3.2 ms.
    d.submit(Request::Write(1000), 0);
    d.submit(Request::Flush, 0);
    // Batch 2: the device idled 46.8 ms, inside its 100 ms tail: 46.8 ms of tail at 1 mW (46 800 nJ), no
    // wake-up. 1000 B read (500 nJ).
    let read = d.submit(Request::Read(1000), 50 * MS);
    assert_eq!(read.idle_before_ns, 50 * MS - 3200 * US);
    // Batch 3: the read was done at 51.1 ms, so the flush at 60 ms opens a new busy period: 8.9 ms of tail
    // (8900 nJ) and the batch's flush cost (1000 nJ).
    d.submit(Request::Flush, 60 * MS);
    // Batch 4 after 439 ms idle: the whole tail (100 000 nJ), then standby: a wake-up. 2000 B written
    // (4000 nJ) and two flushes issued back to back, which pay the batch's fixed cost once (1000 nJ).
    let write = d.submit(Request::Write(2000), 500 * MS);
    assert_eq!(write.idle_before_ns, 500 * MS - 61 * MS);
    d.submit(Request::Flush, 500 * MS);
    d.submit(Request::Flush, 500 * MS);
    // Batch 5 after 493.8 ms: a whole tail and a wake-up again; 100 B read (50 nJ); its own tail counts
    // in full.
    d.submit(Request::Read(100), 1_000 * MS);
    let expected = EnergyReport {
        write_nj: 2000 + 4000,
        read_nj: 500 + 50,
        flush_nj: 3 * 1000,
        tail_nj: 46_800 + 8_900 + 3 * 100_000,
        wakeup_nj: 3 * 5_000,
        total_nj: 6000 + 550 + 3000 + 355_700 + 15_000,
        batches: 5,
        standby_wakeups: 3,
    };
    assert_eq!(d.report().energy, expected);
}

#[test]
fn one_wakeup_per_idle_gap_longer_than_the_tail() {
    let mut d = Device::new(round());
    let first = d.submit(Request::Flush, 0);
    assert_eq!(d.report().energy.standby_wakeups, 1, "the device starts in standby");
    // A gap of exactly the tail: still in the tail, no wake-up.
    d.submit(Request::Flush, first.done_ns + 100 * MS);
    assert_eq!(d.report().energy.standby_wakeups, 1);
    // One more ns: standby.
    d.submit(Request::Flush, d.report().busy_until_ns + 100 * MS + 1);
    // Many short gaps: no wake-up, each gap's tail only.
    for _ in 0..10 {
        d.submit(Request::Flush, d.report().busy_until_ns + MS);
    }
    let e = d.report().energy;
    assert_eq!((e.batches, e.standby_wakeups, e.wakeup_nj), (13, 2, 2 * 5_000));
    // Tails: 100 ms, 100 ms (capped at the tail), 10 × 1 ms, and the last one in full.
    assert_eq!(e.tail_nj, 100_000 + 100_000 + 10 * 1_000 + 100_000);
}

#[test]
fn energy_does_not_depend_on_how_a_busy_period_is_split() {
    // One busy period of the same work: issued at once, or request by request while the device is busy.
    let at_once = {
        let mut d = Device::new(round());
        d.submit(Request::Write(1000), 0);
        d.submit(Request::Write(1000), 0);
        d.submit(Request::Flush, 0);
        d.submit(Request::Flush, 0);
        d.submit(Request::Read(500), 400 * MS);
        d.report()
    };
    let one_by_one = {
        let mut d = Device::new(round());
        d.submit(Request::Write(1000), 0);
        d.submit(Request::Write(1000), MS);
        d.submit(Request::Flush, 3 * MS);
        d.submit(Request::Flush, 5 * MS);
        d.submit(Request::Read(500), 400 * MS);
        d.report()
    };
    assert_eq!(at_once.busy_until_ns, one_by_one.busy_until_ns);
    assert_eq!(at_once.energy, one_by_one.energy);
    // The same bytes in one request instead of two: the busy period ends earlier, but a gap that outlasts
    // the tail costs the same, so the energy is the same.
    let whole = {
        let mut d = Device::new(round());
        d.submit(Request::Write(2000), 0);
        let flushed = d.submit(Request::Flush, 0);
        assert_eq!(flushed.done_ns, 5_200 * US, "one request's latency instead of two");
        d.submit(Request::Read(500), 400 * MS);
        d.report()
    };
    assert_eq!(whole.energy, at_once.energy);
}

#[test]
fn the_wakeup_cost_does_not_grow_with_the_work_that_follows() {
    // The standby penalty this model replaces multiplied a woken batch's whole energy, so batching more
    // bytes behind one wake-up paid more for it. A wake-up costs the same whatever follows it.
    let woken = |bytes: u64| {
        let mut d = Device::new(round());
        d.submit(Request::Write(bytes), 0);
        d.submit(Request::Write(bytes), 10_000 * MS);
        d.report().energy
    };
    let (small, large) = (woken(100), woken(100_000));
    assert_eq!((small.standby_wakeups, large.standby_wakeups), (2, 2));
    assert_eq!(small.wakeup_nj, large.wakeup_nj);
    assert_eq!(large.total_nj - small.total_nj, large.write_nj - small.write_nj);
}

#[test]
fn a_request_from_standby_waits_for_the_wakeup() {
    let mut d = Device::new(DeviceProfile { wakeup_latency_ns: 300 * US, ..round() });
    // From standby: 300 µs wake-up, then 200 µs latency and 2 ms of transfer.
    let first = d.submit(Request::Write(1000), 0);
    assert_eq!((first.start_ns, first.done_ns), (0, 2_500 * US));
    // Inside the tail: no wake-up.
    let second = d.submit(Request::Write(1000), 50 * MS);
    assert_eq!(second.done_ns, 50 * MS + 2_200 * US);
    // After the tail: the wake-up again, flushes included.
    let flush = d.submit(Request::Flush, 200 * MS);
    assert_eq!(flush.done_ns, 200 * MS + 1_300 * US);
}

/// Rate of `count` requests of `bytes`, all issued at 0, in requests per second.
fn burst_rate(profile: &DeviceProfile, count: u64, request: Request) -> f64 {
    let mut d = Device::new(profile.clone());
    for _ in 0..count {
        d.submit(request, 0);
    }
    count as f64 * 1e9 / d.report().busy_until_ns as f64
}

#[test]
fn every_profile_reproduces_its_published_figures() {
    const MIB: u64 = 1 << 20;
    let mut checked = 0;
    for name in DeviceProfile::BUILTIN {
        let profile = DeviceProfile::builtin(name).expect("built-in");
        let Some(published) = profile.published.clone() else { continue };
        for (key, figure) in published.figures() {
            let model = match key {
                "seq_read_mb_per_s" => burst_rate(&profile, 256, Request::Read(MIB)) * MIB as f64 / 1e6,
                "seq_write_mb_per_s" => burst_rate(&profile, 256, Request::Write(MIB)) * MIB as f64 / 1e6,
                "random_read_iops" => burst_rate(&profile, 20_000, Request::Read(4096)),
                "random_write_iops" => burst_rate(&profile, 20_000, Request::Write(4096)),
                other => panic!("{name}: no burst for published figure {other}"),
            };
            let error = (model - figure).abs() / figure;
            // Sequential requests pay the per-request latency too: 1.8 % of a 1 MiB read on emmc-5.1.
            assert!(error < 0.025, "{name} {key}: the model gives {model:.1}, published {figure} ({published:?})");
            checked += 1;
        }
    }
    // 2 bandwidths each for emmc and emmc-cq, and 4 figures each for emmc-5.1, ufs-3.1 and ufs-4.0.
    assert_eq!(checked, 2 * 2 + 3 * 4);
}

#[test]
fn profile_errors_name_the_key() {
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/emmc.toml")).expect("emmc");
    let with = |key: &str, value: &str| {
        let mut lines: Vec<String> =
            good.lines().filter(|l| !l.starts_with(&format!("{key} "))).map(String::from).collect();
        // At the top: the file ends with its [published] table.
        if !value.is_empty() {
            lines.insert(0, format!("{key} = {value}"));
        }
        DeviceProfile::from_toml(&lines.join("\n"))
    };
    assert_eq!(with("queue_depth", "1").expect("unchanged"), DeviceProfile::builtin("emmc").unwrap());
    for (key, value) in [
        ("read_mb_per_s", "0"),
        ("write_mb_per_s", "-46"),
        ("read_latency_us", "nan"),
        ("flush_latency_us", "inf"),
        ("write_latency_us", "\"fast\""),
        ("queue_depth", "0"),
        ("queue_depth", "-1"),
        ("write_nj_per_byte", "-0.5"),
        ("tail_mw", "-1"),
        ("wakeup_latency_us", "1e12"),
        ("standby_penalty", "2.29"),
        ("read_nj_per_byte", ""),
        ("flash_wear", "3"),
    ] {
        let err = with(key, value).expect_err(&format!("{key} = {value} is refused"));
        assert!(err.contains(key), "{key} = {value}: {err}");
    }
    for bad in ["nan", "0", "-86.57"] {
        let err =
            DeviceProfile::from_toml(&good.replace("seq_read_mb_per_s = 86.57", &format!("seq_read_mb_per_s = {bad}")))
                .expect_err("a published figure must be finite and positive");
        assert!(err.contains("published.seq_read_mb_per_s"), "{bad}: {err}");
    }
}

#[test]
fn profiles_load_by_name_or_from_a_file_whose_name_errors_carry() {
    for name in DeviceProfile::BUILTIN {
        assert_eq!(DeviceProfile::load(name).expect("built-in").name, *name);
    }
    let missing = DeviceProfile::load("/nonexistent/phone.toml").expect_err("no such file");
    assert!(missing.contains("/nonexistent/phone.toml") && missing.contains("emmc"), "{missing}");

    let path = std::env::temp_dir().join(format!("mcfs-device-test-{}.toml", std::process::id()));
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/ufs.toml")).expect("ufs");
    std::fs::write(&path, text.replace("name = \"ufs\"", "name = \"my-ufs\"")).expect("write profile");
    let loaded = DeviceProfile::load(path.to_str().expect("utf-8 temp dir"));
    std::fs::write(&path, text.replace("queue_depth = 32", "queue_depth = 0")).expect("write profile");
    let bad = DeviceProfile::load(path.to_str().expect("utf-8 temp dir"));
    std::fs::remove_file(&path).expect("remove profile");
    assert_eq!(loaded.expect("file profile").name, "my-ufs");
    let bad = bad.expect_err("queue_depth 0");
    assert!(bad.contains(path.to_str().unwrap()) && bad.contains("queue_depth"), "{bad}");
}
