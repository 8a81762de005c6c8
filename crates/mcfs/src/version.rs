//! What `mcfs -V` and `mcfs --version` print, put together by build.rs.

// `SHORT` (`-V`): "0.1.0 (commit 1a2b3c4d5e6f, release)"; `LONG` (`--version`):
// also the target, the optional commands built in and the FUSE protocol version.
include!(concat!(env!("OUT_DIR"), "/version.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_commit_profile_and_fuse_protocol() {
        assert!(SHORT.starts_with(env!("CARGO_PKG_VERSION")) && SHORT.contains("(commit "), "{SHORT}");
        for word in ["commit:", "build profile:", "target:", "optional parts:", "FUSE protocol:  7."] {
            assert!(LONG.contains(word), "{word} missing from {LONG}");
        }
    }

    /// build.rs states fuser 0.18's protocol version; a fuser upgrade must revisit it.
    #[test]
    fn the_stated_fuse_protocol_is_the_locked_fusers() {
        let lock = include_str!("../../../Cargo.lock");
        let fuser = lock.split("[[package]]").find(|p| p.contains("name = \"fuser\"")).expect("fuser in Cargo.lock");
        assert!(
            fuser.contains("version = \"0.18."),
            "fuser is no longer 0.18: update FUSE_PROTOCOL in build.rs\n{fuser}"
        );
        assert!(LONG.contains("7.40 (fuser 0.18"), "{LONG}");
    }
}
