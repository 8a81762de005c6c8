//! `mcfs report`: the studies' sections of the report (docs/REPORT.md), made from their results
//! directories. Each study writes only between its markers (`splice`), with its tables (`format`,
//! `stats`, the paper's figures in `paper`) and SVG charts (`plots`, every series named and coloured by
//! `legend`, app codes decoded by `apps`) next to the report file. MobiFS:
//! `mobifs`, `results`, `paper`; FastTrack: `fasttrack`, `fasttrack_results`, `fasttrack_paper`.

pub mod apps;
pub mod fasttrack;
pub mod fasttrack_paper;
pub mod fasttrack_results;
pub mod format;
pub mod legend;
pub mod mobifs;
pub mod paper;
pub mod plots;
pub mod results;
pub mod splice;
pub mod stats;
