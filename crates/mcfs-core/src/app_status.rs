//! Which app is in the foreground, and so what each app's I/O is (FastTrack
//! §4.1–4.2): the foreground (FG) app's requests go first, background (BG)
//! apps' work yields to them, and system services — uids below 10000 or apps
//! named in `fasttrack.system_apps` — are never preempted.
//!
//! Invariant: a system app is `System` even while it is the foreground app,
//! so it neither waits for FG work nor makes BG work wait.

use crate::vct::AppId;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoClass {
    Foreground,
    Background,
    System,
}

/// The foreground app, as the detector last reported it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppStatus {
    foreground: Option<AppId>,
}

impl AppStatus {
    pub fn set_foreground(&mut self, app: Option<AppId>) {
        self.foreground = app;
    }

    pub fn foreground(&self) -> Option<AppId> {
        self.foreground
    }

    /// The class of `app`'s I/O, given whether it is a system app.
    pub fn class_of(&self, app: AppId, system: bool) -> IoClass {
        if system {
            IoClass::System
        } else if self.foreground == Some(app) {
            IoClass::Foreground
        } else {
            IoClass::Background
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_foreground_app_and_spare_system_apps() {
        let mut status = AppStatus::default();
        assert_eq!(status.class_of(1, false), IoClass::Background, "no FG app: everything is BG");
        status.set_foreground(Some(1));
        assert_eq!(status.class_of(1, false), IoClass::Foreground);
        assert_eq!(status.class_of(2, false), IoClass::Background);
        assert_eq!(status.class_of(3, true), IoClass::System);
        status.set_foreground(Some(3));
        assert_eq!(status.class_of(3, true), IoClass::System, "a system app in front stays System");
        assert_eq!(status.class_of(1, false), IoClass::Background);
    }
}
