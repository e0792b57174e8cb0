//! The side-by-side chart (docs/benchmarks.svg): one bar per compared figure showing how many
//! times better rein is than kube-runtime, with the parity line and each row's aim marked.

use std::path::Path;

use plotters::prelude::*;

use super::compare::{Aim, Row};

const ROW_HEIGHT: u32 = 34;
const GREEN: RGBColor = RGBColor(46, 139, 87);
const RED: RGBColor = RGBColor(214, 96, 77);
const GREY: RGBColor = RGBColor(120, 144, 170);

/// Draws the chart for the rows that have both sides' figures (except the writer's rate, which
/// is the server's, not a side's); returns how many bars it drew.
pub(crate) fn draw(rows: &[Row], path: &Path) -> anyhow::Result<usize> {
    let bars: Vec<(&Row, f64)> = rows
        .iter()
        .filter(|r| r.metric != "writer rate")
        .filter_map(|r| r.advantage().map(|a| (r, a)))
        .collect();
    let n = bars.len().max(1);
    let xmax = bars
        .iter()
        .map(|(_, a)| *a)
        .fold(2.0_f64, f64::max)
        .min(20.0)
        * 1.15;
    let height = 90 + ROW_HEIGHT * n as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "rein vs kube-runtime: times better (bar > 1 = rein ahead; tick = aim)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(330)
        .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("advantage (×)")
        .draw()
        .map_err(plot_err)?;
    for (i, (row, adv)) in bars.iter().enumerate() {
        // Row 0 at the top.
        let y = (n - 1 - i) as f64;
        let color = match row.met() {
            Some(true) => GREEN,
            Some(false) => RED,
            None => GREY,
        };
        let shown = adv.min(xmax);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y + 0.2), (shown, y + 0.8)],
                color.filled(),
            )))
            .map_err(plot_err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{adv:.2}×"),
                (shown + xmax * 0.01, y + 0.65),
                ("sans-serif", 13),
            )))
            .map_err(plot_err)?;
        if let Some(aim) = aim_advantage(row.aim) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(aim, y + 0.1), (aim, y + 0.9)],
                    BLACK.stroke_width(2),
                )))
                .map_err(plot_err)?;
        }
        let (px, py) = chart.backend_coord(&(0.0, y + 0.6));
        root.draw(&Text::new(
            format!("{}: {}", row.case, row.metric),
            (px - 322, py - 8),
            ("sans-serif", 14),
        ))
        .map_err(plot_err)?;
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, 0.0), (1.0, n as f64)],
            BLACK.stroke_width(1),
        )))
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(bars.len())
}

/// The aim expressed as an advantage (times better), where the aim is a ratio.
fn aim_advantage(aim: Aim) -> Option<f64> {
    match aim {
        Aim::RatioAtMost(x) => Some(1.0 / x),
        Aim::RatioAtLeast(x) => Some(x),
        Aim::None | Aim::Below(_) => None,
    }
}

fn plot_err(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing the chart: {err}")
}
