//! Grouped bar charts as SVG (plotters, SVG backend only): one group of bars per category (an app or a
//! trace), one bar per series (a config or a predictor), the style of MobiFS Figures 6, 8, 9 and 13.
//!
//! Invariant: the SVG is a pure function of the chart (no fonts are measured from the system, no time
//! stamps), so the same numbers give the same file; a missing value draws no bar.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

pub struct Series {
    pub name: String,
    /// One value per category; `None` draws nothing.
    pub values: Vec<Option<f64>>,
}

pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// A logarithmic y axis, for values spanning orders of magnitude (checkpoint intervals).
    pub log_y: bool,
}

const SIZE: (u32, u32) = (900, 420);
/// Eight colours, so a chart of up to eight series (FastTrack's seven configs) never repeats one.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0xc4, 0x4e, 0x52),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0x93, 0x78, 0x60),
    RGBColor(0xda, 0x8b, 0xc3),
    RGBColor(0x8c, 0x8c, 0x8c),
];
/// Width of one category on the x axis (integer units, so the axis can place its labels at exact
/// centers).
const SLOT: i32 = 1000;
/// Width all bars of a category take together (the rest separates categories).
const GROUP_WIDTH: i32 = 800;

/// The chart as an SVG document.
pub fn render_svg(chart: &BarChart) -> Result<String, String> {
    let mut svg = String::new();
    let values = || chart.series.iter().flat_map(|s| s.values.iter().flatten().copied()).filter(|v| v.is_finite());
    if chart.log_y {
        let positive: Vec<f64> = values().filter(|v| *v > 0.0).collect();
        let low = positive.iter().copied().fold(f64::MAX, f64::min);
        let high = positive.iter().copied().fold(f64::MIN, f64::max);
        let (low, high) = if positive.is_empty() { (0.1, 10.0) } else { (decade_below(low), decade_above(high)) };
        draw(&mut svg, chart, (low..high).log_scale(), low)?;
    } else {
        let high = values().fold(0.0, f64::max);
        let high = if high > 0.0 { high * 1.15 } else { 1.0 };
        draw(&mut svg, chart, 0.0..high, 0.0)?;
    }
    Ok(svg)
}

fn draw<Y>(svg: &mut String, chart: &BarChart, y_range: Y, base: f64) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: &dyn std::fmt::Display| format!("drawing '{}': {e}", chart.title);
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let n = i32::try_from(chart.categories.len().max(1)).map_err(|_| err(&"too many categories"))?;
    let centers: Vec<i32> = (0..n).map(|i| i * SLOT + SLOT / 2).collect();
    let mut ctx = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d((0..n * SLOT).with_key_points(centers), y_range)
        .map_err(|e| err(&e))?;
    let label =
        |v: &i32| usize::try_from(v / SLOT).ok().and_then(|i| chart.categories.get(i)).cloned().unwrap_or_default();
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&label)
        .x_label_style(("sans-serif", 12))
        .y_desc(chart.y_label.as_str())
        .draw()
        .map_err(|e| err(&e))?;
    let k = i32::try_from(chart.series.len().max(1)).map_err(|_| err(&"too many series"))?;
    let bar = GROUP_WIDTH / k;
    for (s, series) in (0..).zip(&chart.series) {
        let color = PALETTE[s as usize % PALETTE.len()];
        let left = move |i: i32| i * SLOT + (SLOT - GROUP_WIDTH) / 2 + s * bar;
        let bars = (0..).zip(&series.values).filter_map(|(i, v)| {
            let v = v.filter(|v| v.is_finite() && *v > base)?;
            Some(Rectangle::new([(left(i), base), (left(i) + bar, v)], color.filled()))
        });
        ctx.draw_series(bars)
            .map_err(|e| err(&e))?
            .label(series.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The power of ten at or below `v` (> 0).
fn decade_below(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

/// The power of ten above `v` (> 0), so the tallest bar never touches the top.
fn decade_above(v: f64) -> f64 {
    10f64.powf(v.log10().floor() + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(log_y: bool) -> BarChart {
        BarChart {
            title: "Figure 6".into(),
            y_label: "seconds".into(),
            categories: vec!["FB".into(), "TT".into(), "WB".into()],
            series: vec![
                Series { name: "ext4-like".into(), values: vec![Some(5.0), Some(2.5), None] },
                Series { name: "mobifs".into(), values: vec![Some(80.0), Some(31.0), Some(120.0)] },
            ],
            log_y,
        }
    }

    #[test]
    fn a_chart_renders_the_same_svg_with_its_labels() {
        for log_y in [false, true] {
            let svg = render_svg(&chart(log_y)).unwrap();
            assert!(svg.starts_with("<svg"), "{log_y}");
            for text in ["Figure 6", "seconds", "FB", "TT", "WB", "ext4-like", "mobifs"] {
                assert!(svg.contains(text), "{text} missing (log {log_y})");
            }
            assert_eq!(svg, render_svg(&chart(log_y)).unwrap(), "deterministic");
        }
    }

    #[test]
    fn decades_enclose_the_values() {
        assert_eq!((decade_below(3.0), decade_above(3.0)), (1.0, 10.0));
        assert_eq!((decade_below(0.25), decade_above(250.0)), (0.1, 1000.0));
    }

    #[test]
    fn an_empty_chart_still_renders() {
        let empty =
            BarChart { title: "t".into(), y_label: "y".into(), categories: vec![], series: vec![], log_y: true };
        assert!(render_svg(&empty).unwrap().starts_with("<svg"));
    }
}
