//! The one display name and colour of every configuration (and idle predictor) the report's figures
//! draw. Charts take a `Config`, never a name or a colour, so a configuration looks the same in every
//! figure of the report, whichever other series a figure draws beside it.
//!
//! Invariant: the configurations of one study have distinct colours (they share figures); the baselines
//! are grey and each study's full system blue, so the two studies read alike.

use plotters::style::RGBColor;

/// A series of the report's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// MobiFS study (simulated): `ext4`, the `ext4-like` transaction policy.
    Ext4Like,
    /// MobiFS study: `mobifs-tpl`, TPL with checkpoints as soon as a VCT closes.
    MobifsTpl,
    /// MobiFS study: `mobifs`, TPL with the state machine (the full system).
    Mobifs,
    /// MobiFS idle predictors (Figures 8 and 9): the state machine, last-min, last-average.
    StateMachine,
    LastMin,
    LastAverage,
    /// FastTrack study: ext4 (live; `ext4-like` in the simulator) with FG and BG apps.
    Ext4,
    /// FastTrack study: mcfs with every FastTrack part off.
    McfsOff,
    /// FastTrack study: preemption, FG-aware reclaim, FG-first dispatch, each alone.
    Pa,
    Pr,
    Id,
    /// FastTrack study: all three parts (FastT⁻), and with the device's FG-first scheduler (FastT).
    FastTMinus,
    FastT,
}

const GREY: RGBColor = RGBColor(0x8c, 0x8c, 0x8c);
const BLUE: RGBColor = RGBColor(0x4c, 0x72, 0xb0);
const LIGHT_BLUE: RGBColor = RGBColor(0x9d, 0xc3, 0xe6);
const ORANGE: RGBColor = RGBColor(0xdd, 0x84, 0x52);
const GREEN: RGBColor = RGBColor(0x55, 0xa8, 0x68);
const PURPLE: RGBColor = RGBColor(0x81, 0x72, 0xb3);
const BROWN: RGBColor = RGBColor(0x93, 0x78, 0x60);
const PINK: RGBColor = RGBColor(0xda, 0x8b, 0xc3);

impl Config {
    /// The name legends and tables use.
    pub fn name(self) -> &'static str {
        match self {
            Config::Ext4Like => "ext4-like",
            Config::MobifsTpl => "mobifs-tpl",
            Config::Mobifs => "mobifs",
            Config::StateMachine => "SM",
            Config::LastMin => "LMM",
            Config::LastAverage => "LAM",
            Config::Ext4 => "ext4 FG+BG",
            Config::McfsOff => "mcfs FG+BG",
            Config::Pa => "PA",
            Config::Pr => "PR",
            Config::Id => "ID",
            Config::FastTMinus => "FastT⁻",
            Config::FastT => "FastT",
        }
    }

    pub fn color(self) -> RGBColor {
        match self {
            Config::Ext4Like | Config::Ext4 => GREY,
            Config::MobifsTpl => LIGHT_BLUE,
            Config::Mobifs | Config::FastT => BLUE,
            Config::StateMachine | Config::FastTMinus => PURPLE,
            Config::LastMin | Config::Pr => ORANGE,
            Config::LastAverage | Config::Pa => GREEN,
            Config::McfsOff => BROWN,
            Config::Id => PINK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The series of the MobiFS study (configurations and predictors) and of the FastTrack study.
    const MOBIFS: [Config; 6] = [
        Config::Ext4Like,
        Config::MobifsTpl,
        Config::Mobifs,
        Config::StateMachine,
        Config::LastMin,
        Config::LastAverage,
    ];
    const FASTTRACK: [Config; 7] =
        [Config::Ext4, Config::McfsOff, Config::Pa, Config::Pr, Config::Id, Config::FastTMinus, Config::FastT];

    #[test]
    fn a_studys_configurations_have_distinct_names_and_colours() {
        for study in [&MOBIFS[..], &FASTTRACK[..]] {
            for (i, a) in study.iter().enumerate() {
                for b in &study[i + 1..] {
                    assert_ne!(a.name(), b.name(), "{a:?} and {b:?}");
                    assert_ne!(a.color(), b.color(), "{a:?} and {b:?} share a colour");
                }
            }
        }
    }

    #[test]
    fn baselines_are_grey_and_full_systems_blue_in_both_studies() {
        assert_eq!(Config::Ext4Like.color(), Config::Ext4.color());
        assert_eq!(Config::Mobifs.color(), Config::FastT.color());
    }
}
