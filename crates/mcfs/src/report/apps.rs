//! What the synthetic suite's trace codes (`TT`, `FB-u3`) stand for, for the key under a figure whose
//! axis shows the codes: the app of MobiFS §7.1 each entry models, and for the users of one app, the
//! user profile that tells them apart. The codes come from `mcfs_sim::synth::suite()`, so a code is
//! decoded the way the suite generated it.

use mcfs_sim::synth;

/// The apps of the suite by package name (MobiFS §7.1).
const APP_NAMES: [(&str, &str); 10] = [
    ("com.facebook.katana", "Facebook"),
    ("com.pandora.android", "Pandora"),
    ("com.rovio.angrybirds", "Angry Birds"),
    ("com.netflix.mediaclient", "Netflix"),
    ("com.twitter.android", "Twitter"),
    ("com.google.android.apps.maps", "Google Maps"),
    ("com.citrix.Receiver", "Citrix Receiver"),
    ("flipboard.app", "Flipboard"),
    ("com.android.browser", "Android Browser"),
    ("com.tencent.mm", "WeChat"),
];

/// How a key names an entry: by its app, or (users of one app) by app and user profile.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Naming {
    App,
    AppAndUser,
}

/// "Twitter" for `TT`, "Facebook (skimmer user)" for `FB-u1` with `AppAndUser`; `None` for a trace that
/// is not a suite entry (a recorded program, named in full already).
pub fn decode(code: &str, naming: Naming) -> Option<String> {
    let (_, spec) = synth::suite().into_iter().find(|(entry, _)| entry == code)?;
    let app = APP_NAMES.iter().find(|(package, _)| *package == spec.app)?.1;
    Some(match naming {
        Naming::App => app.to_string(),
        Naming::AppAndUser => format!("{app} ({} user)", spec.user_profile),
    })
}

/// "AB = Angry Birds, CR = Citrix Receiver, ..." for the codes that decode; `None` if none does.
pub fn key(codes: &[String], naming: Naming) -> Option<String> {
    let pairs: Vec<String> =
        codes.iter().filter_map(|c| decode(c, naming).map(|name| format!("{c} = {name}"))).collect();
    (!pairs.is_empty()).then(|| pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_entry_decodes_to_an_app_name() {
        for (entry, spec) in synth::suite() {
            let name = decode(&entry, Naming::App).unwrap_or_else(|| panic!("{entry} ({}) has no name", spec.app));
            assert!(!name.contains('.'), "{entry}: a name, not the package {name}");
        }
        assert_eq!(decode("TT", Naming::App).as_deref(), Some("Twitter"));
        assert_eq!(decode("FB-u1", Naming::AppAndUser).as_deref(), Some("Facebook (skimmer user)"));
        assert_eq!(decode("git-notes", Naming::App), None);
    }

    #[test]
    fn the_key_lists_the_codes_that_decode_in_their_order() {
        let codes: Vec<String> = ["WC", "git-notes", "AB"].map(String::from).into();
        assert_eq!(key(&codes, Naming::App).as_deref(), Some("WC = WeChat, AB = Angry Birds"));
        assert_eq!(key(&["sqlite3-messaging".to_string()], Naming::App), None);
    }
}
