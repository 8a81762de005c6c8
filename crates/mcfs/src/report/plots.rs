//! Grouped bar charts as SVG (plotters, SVG backend only): one group of bars per category (an app, a
//! trace, a number of BG apps), one bar per series (a configuration or a predictor, named and coloured by
//! `legend`), the style of the papers' bar figures. Every chart has both axes labelled, its legend beside
//! the plot (so it never hides a bar), whiskers from the smallest to the largest run where a bar stands
//! for several runs, an optional labelled reference line (1× in normalized figures), and its caption
//! under the plot: what the codes on the x axis stand for and how many runs each bar is (n = …).
//!
//! Invariant: the SVG is a pure function of the chart (no fonts are measured from the system, no time
//! stamps), so the same numbers give the same file; a missing value draws no bar.

use super::format::count_range;
use super::legend::Config;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One bar: a value and the runs behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    /// Repetitions the value sums up; with two or more a whisker spans `low` to `high`.
    pub runs: usize,
    pub low: f64,
    pub high: f64,
}

impl Bar {
    /// A value from one run (a deterministic simulation): no spread.
    pub fn single(value: f64) -> Bar {
        Bar { value, runs: 1, low: value, high: value }
    }
}

pub struct Series {
    pub config: Config,
    /// One bar per category; `None` draws nothing.
    pub bars: Vec<Option<Bar>>,
}

/// A horizontal line across the plot, named in the legend.
pub struct Reference {
    pub y: f64,
    pub label: String,
}

pub struct BarChart {
    pub title: String,
    /// Axis descriptions with their units; a chart without one is refused.
    pub x_label: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// A logarithmic y axis, for values spanning orders of magnitude (checkpoint intervals).
    pub log_y: bool,
    pub reference: Option<Reference>,
    /// Caption lines before the run count (the key of the codes on the x axis, how bars are made).
    pub notes: Vec<String>,
}

impl BarChart {
    fn bars(&self) -> impl Iterator<Item = &Bar> {
        self.series.iter().flat_map(|s| s.bars.iter().flatten())
    }

    fn has_whiskers(&self) -> bool {
        self.bars().any(|b| b.runs > 1)
    }

    /// The caption: the notes, then the number of runs per bar.
    pub fn caption(&self) -> Vec<String> {
        let mut lines = self.notes.clone();
        if self.bars().next().is_some() {
            let n = count_range(self.bars().map(|b| b.runs));
            lines.push(if self.has_whiskers() {
                format!("n = {n} runs per bar; whiskers span the smallest to the largest run")
            } else {
                format!("n = {n} run per bar, so no spread to show")
            });
        }
        lines
    }
}

/// The chart's Markdown (its image, saved as `plot_link/file`, and its caption) and its SVG.
pub fn figure(chart: &BarChart, plot_link: &str, file: &str) -> Result<(String, String), String> {
    let svg = render_svg(chart)?;
    let mut markdown = format!("![{}]({plot_link}/{file})\n\n", chart.title);
    let caption = chart.caption();
    if !caption.is_empty() {
        markdown.push_str(&format!("_{}._\n\n", caption.join(". ")));
    }
    Ok((markdown, svg))
}

const WIDTH: u32 = 1000;
const PLOT_HEIGHT: u32 = 440;
const LEGEND_WIDTH: u32 = 170;
/// Height of one line of the caption under the plot, and the characters it holds.
const LINE: u32 = 16;
const LINE_CHARS: usize = 150;
const FONT: &str = "sans-serif";
const WHISKER: RGBColor = RGBColor(0x22, 0x22, 0x22);
const REFERENCE: RGBColor = RGBColor(0xa0, 0x1c, 0x1c);
/// Width of one category on the x axis (integer units, so the axis can place its labels at exact
/// centers).
const SLOT: i32 = 1000;
/// Width all bars of a category take together (the rest separates categories).
const GROUP_WIDTH: i32 = 800;

/// The chart as an SVG document.
pub fn render_svg(chart: &BarChart) -> Result<String, String> {
    for (axis, label) in [("x", &chart.x_label), ("y", &chart.y_label)] {
        if label.trim().is_empty() {
            return Err(format!("drawing '{}': the {axis} axis has no label", chart.title));
        }
    }
    let mut svg = String::new();
    draw(&mut svg, chart).map_err(|e| format!("drawing '{}': {e}", chart.title))?;
    Ok(svg)
}

/// Plotters' errors as text (their types differ between calls).
fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The title, the plot with the legend on its right, and the caption under both.
fn draw(svg: &mut String, chart: &BarChart) -> Result<(), String> {
    let lines: Vec<String> = chart.caption().iter().flat_map(|l| wrap(l, LINE_CHARS)).collect();
    let footer = if lines.is_empty() { 0 } else { 8 + LINE * lines.len() as u32 };
    let root = SVGBackend::with_string(svg, (WIDTH, PLOT_HEIGHT + footer)).into_drawing_area();
    root.fill(&WHITE).map_err(text)?;
    let (upper, notes) = root.split_vertically(PLOT_HEIGHT);
    let upper = upper.titled(&chart.title, (FONT, 18)).map_err(text)?;
    let (plot, legend) = upper.split_horizontally(WIDTH - LEGEND_WIDTH);
    draw_plot(&plot, chart)?;
    draw_legend(&legend, chart).map_err(text)?;
    for (line, caption) in (0..).zip(&lines) {
        notes.draw(&Text::new(caption.as_str(), (12, 4 + line * LINE as i32), (FONT, 12))).map_err(text)?;
    }
    root.present().map_err(text)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The axes and bars, on a y range that holds every bar, whisker and the reference line.
fn draw_plot(area: &Area, chart: &BarChart) -> Result<(), String> {
    let values: Vec<f64> = chart
        .bars()
        .flat_map(|b| [b.value, b.low, b.high])
        .chain(chart.reference.as_ref().map(|r| r.y))
        .filter(|v| v.is_finite())
        .collect();
    if chart.log_y {
        let positive: Vec<f64> = values.into_iter().filter(|v| *v > 0.0).collect();
        let low = positive.iter().copied().fold(f64::MAX, f64::min);
        let high = positive.iter().copied().fold(f64::MIN, f64::max);
        let (low, high) = if positive.is_empty() { (0.1, 10.0) } else { (decade_below(low), decade_above(high)) };
        draw_bars(area, chart, (low..high).log_scale(), low)
    } else {
        let high = values.into_iter().fold(0.0, f64::max);
        let high = if high > 0.0 { high * 1.15 } else { 1.0 };
        draw_bars(area, chart, 0.0..high, 0.0)
    }
}

fn draw_bars<Y>(area: &Area, chart: &BarChart, y_range: Y, base: f64) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let n = i32::try_from(chart.categories.len().max(1)).map_err(|_| "too many categories")?;
    let centers: Vec<i32> = (0..n).map(|i| i * SLOT + SLOT / 2).collect();
    let mut ctx = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d((0..n * SLOT).with_key_points(centers), y_range)
        .map_err(text)?;
    let label =
        |v: &i32| usize::try_from(v / SLOT).ok().and_then(|i| chart.categories.get(i)).cloned().unwrap_or_default();
    ctx.configure_mesh()
        .disable_x_mesh()
        // Grid lines at the labelled values only: the minor ones crowd the bars.
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&label)
        .x_label_style((FONT, 12))
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(text)?;
    let k = i32::try_from(chart.series.len().max(1)).map_err(|_| "too many series")?;
    let width = GROUP_WIDTH / k;
    for (s, series) in (0..).zip(&chart.series) {
        let left = move |i: i32| i * SLOT + (SLOT - GROUP_WIDTH) / 2 + s * width;
        let bars: Vec<(i32, Bar)> = (0..)
            .zip(&series.bars)
            .filter_map(|(i, b)| b.filter(|b| b.value.is_finite() && b.value > base).map(|b| (i, b)))
            .collect();
        let fill = series.config.color().filled();
        ctx.draw_series(
            bars.iter().map(|(i, b)| Rectangle::new([(left(*i), base), (left(*i) + width, b.value)], fill)),
        )
        .map_err(text)?;
        let spread = bars.iter().filter(|(_, b)| b.runs > 1 && b.low > base && b.high.is_finite());
        ctx.draw_series(spread.map(|(i, b)| whisker(left(*i) + width / 2, width / 4, b.low, b.high))).map_err(text)?;
    }
    if let Some(r) = &chart.reference {
        let line = DashedPathElement::new([(0, r.y), (n * SLOT, r.y)], 8, 5, REFERENCE.stroke_width(2));
        ctx.draw_series(std::iter::once(line)).map_err(text)?;
    }
    Ok(())
}

/// A vertical line from `low` to `high` at `x` with caps `half` wide, as one path (caps, then the line).
fn whisker<Y: Copy>(x: i32, half: i32, low: Y, high: Y) -> PathElement<(i32, Y)> {
    let points = vec![(x - half, high), (x + half, high), (x, high), (x, low), (x - half, low), (x + half, low)];
    PathElement::new(points, WHISKER.stroke_width(1))
}

/// The series' swatches and names, then the reference line and the whisker, if the chart has them.
fn draw_legend(area: &Area, chart: &BarChart) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let text = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 40;
    for series in &chart.series {
        area.draw(&Rectangle::new([(8, y - 6), (22, y + 6)], series.config.color().filled()))?;
        area.draw(&Text::new(series.config.name(), (30, y), &text))?;
        y += 22;
    }
    if let Some(r) = &chart.reference {
        area.draw(&DashedPathElement::new([(6, y), (24, y)], 5, 3, REFERENCE.stroke_width(2)))?;
        area.draw(&Text::new(r.label.as_str(), (30, y), &text))?;
        y += 22;
    }
    if chart.has_whiskers() {
        area.draw(&whisker(15, 4, y + 7, y - 7))?;
        area.draw(&Text::new("smallest–largest run", (30, y), &text))?;
    }
    Ok(())
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The power of ten at or below `v` (> 0).
fn decade_below(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

/// The power of ten above `v` (> 0), so the tallest bar never touches the top.
fn decade_above(v: f64) -> f64 {
    10f64.powf(v.log10().floor() + 1.0)
}

/// The text of every `<text>` element of an SVG, trimmed (for the studies' tests too).
#[cfg(test)]
pub fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text ").skip(1).filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The attributes of every `<tag ...>` element of `svg`.
    fn elements(svg: &str, tag: &str) -> Vec<BTreeMap<String, String>> {
        let open = format!("<{tag} ");
        svg.match_indices(&open)
            .map(|(at, _)| {
                let body = &svg[at + open.len()..];
                let body = &body[..body.find('>').expect("element closes")];
                body.split('"')
                    .collect::<Vec<_>>()
                    .chunks(2)
                    .filter_map(|kv| Some((kv[0].trim().trim_end_matches('=').to_string(), kv.get(1)?.to_string())))
                    .collect()
            })
            .collect()
    }

    /// The (x, y) points of the `<polyline>`s stroked in `color` left of the legend.
    fn lines_in_plot(svg: &str, color: RGBColor) -> Vec<Vec<(i32, i32)>> {
        elements(svg, "polyline")
            .into_iter()
            .filter(|e| e["stroke"] == hex(color))
            .map(|e| {
                e["points"]
                    .split_whitespace()
                    .map(|p| p.split_once(',').map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap())).unwrap())
                    .collect::<Vec<(i32, i32)>>()
            })
            .filter(|points| points.iter().all(|(x, _)| *x < (WIDTH - LEGEND_WIDTH) as i32))
            .collect()
    }

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    /// The `<rect>`s filled in `config`'s colour left of the legend: the bars.
    fn bars_of(svg: &str, config: Config) -> Vec<BTreeMap<String, String>> {
        let x = |e: &BTreeMap<String, String>| e["x"].parse::<i32>().unwrap();
        elements(svg, "rect")
            .into_iter()
            .filter(|e| e["fill"] == hex(config.color()) && x(e) < (WIDTH - LEGEND_WIDTH) as i32)
            .collect()
    }

    fn number(e: &BTreeMap<String, String>, key: &str) -> i32 {
        e[key].parse().unwrap()
    }

    fn chart(log_y: bool) -> BarChart {
        BarChart {
            title: "Figure 6".into(),
            x_label: "app (synthetic trace)".into(),
            y_label: "mean interval (s)".into(),
            categories: vec!["FB".into(), "TT".into(), "WB".into()],
            series: vec![
                Series { config: Config::Ext4Like, bars: vec![Some(Bar::single(5.0)), Some(Bar::single(2.5)), None] },
                Series { config: Config::Mobifs, bars: [80.0, 31.0, 120.0].map(|v| Some(Bar::single(v))).into() },
            ],
            log_y,
            reference: None,
            notes: vec!["FB = Facebook, TT = Twitter, WB = Android Browser".into()],
        }
    }

    #[test]
    fn a_chart_renders_the_same_svg_with_its_title_axis_labels_legend_and_caption() {
        for log_y in [false, true] {
            let svg = render_svg(&chart(log_y)).unwrap();
            assert!(svg.starts_with("<svg"), "{log_y}");
            let texts = texts(&svg);
            for text in [
                "Figure 6",
                "app (synthetic trace)",
                "mean interval (s)",
                "FB",
                "TT",
                "WB",
                "ext4-like",
                "mobifs",
                "FB = Facebook, TT = Twitter, WB = Android Browser",
                "n = 1 run per bar, so no spread to show",
            ] {
                assert!(texts.contains(&text), "{text} missing (log {log_y}) in {texts:?}");
            }
            assert_eq!(bars_of(&svg, Config::Mobifs).len(), 3, "a bar per value");
            assert_eq!(bars_of(&svg, Config::Ext4Like).len(), 2, "no bar for a missing value");
            assert_eq!(svg, render_svg(&chart(log_y)).unwrap(), "deterministic");
        }
    }

    #[test]
    fn a_chart_without_an_axis_label_is_refused() {
        let no_x = BarChart { x_label: " ".into(), ..chart(false) };
        assert!(render_svg(&no_x).unwrap_err().contains("the x axis has no label"));
        let no_y = BarChart { y_label: String::new(), ..chart(true) };
        assert!(render_svg(&no_y).unwrap_err().contains("the y axis has no label"));
    }

    #[test]
    fn a_config_has_its_colour_whatever_its_position_in_the_figure() {
        let alone = BarChart { series: chart(false).series.into_iter().skip(1).collect(), ..chart(false) };
        for svg in [render_svg(&chart(false)).unwrap(), render_svg(&alone).unwrap()] {
            assert_eq!(bars_of(&svg, Config::Mobifs).len(), 3, "mobifs's bars are in its own colour");
        }
    }

    /// A chart with the reference line at 1 and a bar of exactly 1 to find its height by.
    fn normalized(runs: usize) -> BarChart {
        let bar = |value: f64, low: f64, high: f64| Some(Bar { value, runs, low, high });
        BarChart {
            title: "Fig. 13".into(),
            x_label: "BG apps (count)".into(),
            y_label: "FG time (× FG-only)".into(),
            categories: vec!["0".into(), "2".into()],
            series: vec![
                Series { config: Config::FastT, bars: vec![bar(2.0, 1.0, 4.0), bar(3.0, 2.5, 3.5)] },
                Series { config: Config::Ext4, bars: vec![Some(Bar::single(1.0)), None] },
            ],
            log_y: false,
            reference: Some(Reference { y: 1.0, label: "1× = FG-only time".into() }),
            notes: vec![],
        }
    }

    #[test]
    fn the_reference_line_crosses_the_plot_at_its_value_and_is_named() {
        let svg = render_svg(&normalized(1)).unwrap();
        assert!(texts(&svg).contains(&"1× = FG-only time"), "named in the legend");
        let one = bars_of(&svg, Config::Ext4);
        let top_of_one = number(&one[0], "y");
        let dashes = lines_in_plot(&svg, REFERENCE);
        assert!(dashes.len() > 10, "a dashed line: {dashes:?}");
        assert!(dashes.iter().flatten().all(|(_, y)| *y == top_of_one), "at the height of a bar of 1: {dashes:?}");
        let (left, right) = dashes.iter().flatten().fold((i32::MAX, 0), |(l, r), (x, _)| (l.min(*x), r.max(*x)));
        assert!(right - left > 600, "across the plot: {left}..{right}");
        let without = BarChart { reference: None, ..normalized(1) };
        assert!(!render_svg(&without).unwrap().contains(&hex(REFERENCE)), "no line unless asked for");
    }

    #[test]
    fn whiskers_span_the_runs_only_where_a_bar_has_repetitions() {
        let single = render_svg(&normalized(1)).unwrap();
        assert!(lines_in_plot(&single, WHISKER).is_empty(), "one run: no whisker");
        let svg = render_svg(&normalized(3)).unwrap();
        let whiskers = lines_in_plot(&svg, WHISKER);
        assert_eq!(whiskers.len(), 2, "one per FastT bar, none on the single ext4 bar: {whiskers:?}");
        let bars = bars_of(&svg, Config::FastT);
        // The first bar: 2 from 1 to 4, so its top is a third of the way up the whisker.
        let (top, bottom) = (whiskers[0][0].1, whiskers[0][3].1);
        let bar_top = number(&bars[0], "y");
        assert!(top < bar_top && bar_top < bottom, "{top} < {bar_top} < {bottom}");
        assert!(((bottom - bar_top) as f64 / (bottom - top) as f64 - 1.0 / 3.0).abs() < 0.02);
        let bar_center = number(&bars[0], "x") + number(&bars[0], "width") / 2;
        assert!((whiskers[0][2].0 - bar_center).abs() <= 1, "on the bar's center");
        let texts = texts(&svg);
        assert!(texts.contains(&"n = 1–3 runs per bar; whiskers span the smallest to the largest run"), "{texts:?}");
        assert!(texts.contains(&"smallest–largest run"), "the legend shows the whisker: {texts:?}");
    }

    #[test]
    fn the_markdown_shows_the_image_and_the_caption() {
        let (markdown, svg) = figure(&normalized(3), "report", "f.svg").unwrap();
        assert_eq!(
            markdown,
            "![Fig. 13](report/f.svg)\n\n_n = 1–3 runs per bar; whiskers span the smallest to the largest run._\n\n"
        );
        assert_eq!(svg, render_svg(&normalized(3)).unwrap());
    }

    #[test]
    fn long_captions_wrap_between_words() {
        assert_eq!(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("toolongword x", 4), ["toolongword", "x"]);
        let key = ["AB = Angry Birds,"; 20].join(" ");
        let svg = render_svg(&BarChart { notes: vec![key], ..chart(false) }).unwrap();
        let lines: Vec<&str> = texts(&svg).into_iter().filter(|t| t.contains("Birds")).collect();
        assert!(lines.len() >= 3, "on several lines: {lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= LINE_CHARS), "{lines:?}");
    }

    #[test]
    fn decades_enclose_the_values() {
        assert_eq!((decade_below(3.0), decade_above(3.0)), (1.0, 10.0));
        assert_eq!((decade_below(0.25), decade_above(250.0)), (0.1, 1000.0));
    }

    #[test]
    fn an_empty_chart_still_renders() {
        let empty = BarChart { categories: vec![], series: vec![], notes: vec![], ..chart(true) };
        assert!(render_svg(&empty).unwrap().starts_with("<svg"));
        assert!(empty.caption().is_empty(), "no bars, no run count");
    }
}
