//! The device model's energy and the profiles against hand-computed figures: batches, flush costs and
//! standby wake-ups on a device with round figures (`fixtures/round.toml`), and the errors of bad profiles.

use mcfs_device::{Device, DeviceProfile, EnergyReport, Request};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn round() -> DeviceProfile {
    DeviceProfile::from_toml(include_str!("fixtures/round.toml")).expect("round profile parses")
}

#[test]
fn energy_of_a_hand_built_sequence_with_a_standby_wakeup() {
    let mut d = Device::new(round());
    // Batch 1 at 0: 1000 B written (2000 nJ) and a flush (1000 nJ); done at 3.2 ms.
    d.submit(Request::Write(1000), 0);
    d.submit(Request::Flush, 0);
    // Batch 2: the device idled 46.8 ms (< 100 ms): no standby. 1000 B read (500 nJ).
    let read = d.submit(Request::Read(1000), 50 * MS);
    assert_eq!(read.idle_before_ns, 50 * MS - 3200 * US);
    // Batch 3: the read was done, so the flush at 60 ms opens a new busy period (1000 nJ).
    d.submit(Request::Flush, 60 * MS);
    // Batch 4 after 439 ms idle: from standby. 2000 B written (4000 nJ) and two flushes issued back to
    // back, which pay the batch's fixed cost once (1000 nJ); all × 2.5.
    let write = d.submit(Request::Write(2000), 500 * MS);
    assert_eq!(write.idle_before_ns, 500 * MS - 61 * MS);
    d.submit(Request::Flush, 500 * MS);
    d.submit(Request::Flush, 500 * MS);
    // Batch 5, still open: from standby again, 100 B read (50 nJ), × 2.5.
    d.submit(Request::Read(100), 1_000 * MS);
    let expected = EnergyReport {
        write_nj: 2000 + 4000,
        read_nj: 500 + 50,
        flush_nj: 3 * 1000,
        standby_penalty_nj: (4000 + 1000) * 3 / 2 + 50 * 3 / 2,
        total_nj: 6000 + 550 + 3000 + 7575,
        batches: 5,
        standby_wakeups: 2,
    };
    assert_eq!(d.report().energy, expected);
}

#[test]
fn an_idle_gap_of_exactly_standby_after_is_not_standby() {
    let mut d = Device::new(round());
    let first = d.submit(Request::Flush, 0);
    d.submit(Request::Flush, first.done_ns + 100 * MS);
    assert_eq!(d.report().energy.standby_wakeups, 0);
    d.submit(Request::Flush, d.report().busy_until_ns + 100 * MS + 1);
    assert_eq!(d.report().energy.standby_wakeups, 1);
    assert_eq!(d.report().energy.standby_penalty_nj, 1500);
}

#[test]
fn profile_errors_name_the_key() {
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/emmc.toml")).expect("emmc");
    let with = |key: &str, value: &str| {
        let mut lines: Vec<String> =
            good.lines().filter(|l| !l.starts_with(&format!("{key} "))).map(String::from).collect();
        if !value.is_empty() {
            lines.push(format!("{key} = {value}"));
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
        ("standby_penalty", "0.5"),
        ("read_nj_per_byte", ""),
        ("flash_wear", "3"),
    ] {
        let err = with(key, value).expect_err(&format!("{key} = {value} is refused"));
        assert!(err.contains(key), "{key} = {value}: {err}");
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
