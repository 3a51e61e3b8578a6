//! Results on disk: the final fire line as CSV and a picture of the burned area as SVG.
//!
//! The SVG is written by hand: it is a few rectangles, lines and a polygon, and hand-written
//! output stays small (cells of one fuel are merged into row runs), deterministic and free of a
//! plotting dependency with its fonts and backends.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::app::Outcome;
use crate::front::Front;
use crate::fuels;
use crate::terrain::{Landscape, NON_BURNABLE};

/// The final fire line, one `x_m,y_m` line per point after a header.
pub fn csv(front: &Front) -> String {
    let mut out = String::with_capacity(24 * front.points.len() + 9);
    out.push_str("x_m,y_m\n");
    for p in &front.points {
        let _ = writeln!(out, "{:.3},{:.3}", p[0], p[1]);
    }
    out
}

/// Writes `PREFIX.csv` and `PREFIX.svg`; returns their paths.
///
/// # Errors
/// The file that could not be written, with the reason.
pub fn write(prefix: &Path, land: &Landscape, outcome: &Outcome) -> Result<[PathBuf; 2], String> {
    let paths = paths(prefix);
    let contents = [csv(&outcome.front), svg(land, outcome)];
    // Each whole or not at all: a run killed while writing leaves the previous file.
    for (path, text) in paths.iter().zip(contents) {
        mw::write_output(path, |out| out.write_all(text.as_bytes())).map_err(|e| e.to_string())?;
    }
    Ok(paths)
}

/// `PREFIX.csv` and `PREFIX.svg`.
pub fn paths(prefix: &Path) -> [PathBuf; 2] {
    let with = |ext: &str| {
        let mut name = prefix.as_os_str().to_owned();
        name.push(ext);
        PathBuf::from(name)
    };
    [with(".csv"), with(".svg")]
}

/// Fill colour of a fuel code.
fn colour(fuel: u8) -> &'static str {
    const COLOURS: [&str; 14] = [
        "#7f8c99", // non-burnable
        "#f2e68c", "#d8c35c", "#e9b44c", // grass
        "#7b5b2f", "#9c7a3c", "#b38f5a", "#8a6d3b", // shrub
        "#4e7a3a", "#6f9c48", "#3b6a2e", // timber
        "#b59e86", "#93765e", "#6f5342", // slash
    ];
    COLOURS.get(usize::from(fuel)).copied().unwrap_or("#ffffff")
}

/// The burned area over the fuel map, with elevation contours, the ignition point, the mean wind
/// and a legend. Drawn in metres, north up.
pub fn svg(land: &Landscape, outcome: &Outcome) -> String {
    let (nx, ny) = land.size();
    let c = land.cell_m();
    let [w, h] = land.extent_m();
    let legend_w = w * 0.4;
    let px_w = 900.0;
    let px_h = px_w * h / (w + legend_w);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{px_w:.0}" height="{px_h:.0}" viewBox="0 0 {:.1} {h:.1}" font-family="sans-serif">"#,
        w + legend_w
    );
    // Grid y grows north; SVG y grows down.
    let y = |ym: f64| h - ym;

    // Fuel: runs of equal fuel along each row, grouped by fuel.
    for fuel in 0..=fuels::STANDARD.len() as u8 {
        let mut rects = String::new();
        for j in 0..ny {
            let mut i = 0;
            while i < nx {
                if land.fuel(i, j) != fuel {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < nx && land.fuel(i, j) == fuel {
                    i += 1;
                }
                let _ = write!(
                    rects,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{c:.1}"/>"#,
                    start as f64 * c,
                    y((j + 1) as f64 * c),
                    (i - start) as f64 * c
                );
            }
        }
        if !rects.is_empty() {
            let _ = writeln!(
                s,
                r#"<g fill="{}" shape-rendering="crispEdges">{rects}</g>"#,
                colour(fuel)
            );
        }
    }

    // Elevation contours.
    let _ = writeln!(
        s,
        r##"<path d="{}" fill="none" stroke="#4a3b2a" stroke-opacity="0.45" stroke-width="{:.1}"/>"##,
        contours(land, 10),
        c * 0.08
    );

    // Burned area and fire line.
    let mut d = String::new();
    for (k, p) in outcome.front.points.iter().enumerate() {
        let _ = write!(
            d,
            "{}{:.1},{:.1} ",
            if k == 0 { "M" } else { "L" },
            p[0],
            y(p[1])
        );
    }
    let _ = writeln!(
        s,
        r##"<path d="{d}Z" fill="#d7301f" fill-opacity="0.45" stroke="#8b0000" stroke-width="{:.1}" stroke-linejoin="round"/>"##,
        c * 0.15
    );

    // Ignition point.
    let ig = land.ignition();
    let _ = writeln!(
        s,
        r##"<circle cx="{:.1}" cy="{:.1}" r="{:.1}" fill="#ffff00" stroke="#000" stroke-width="{:.1}"/>"##,
        ig[0],
        y(ig[1]),
        c * 0.8,
        c * 0.15
    );

    legend(&mut s, land, outcome, w, h, legend_w);
    s.push_str("</svg>\n");
    s
}

/// Fuel colours, the mean wind and the run's numbers, right of the map.
fn legend(s: &mut String, land: &Landscape, outcome: &Outcome, w: f64, h: f64, legend_w: f64) {
    let (nx, ny) = land.size();
    let x0 = w + legend_w * 0.06;
    let line = h / 34.0;
    let font = line * 0.55;
    let mut row = 1.5;
    let text = |s: &mut String, row: f64, body: &str| {
        let _ = writeln!(
            s,
            r#"<text x="{x0:.1}" y="{:.1}" font-size="{font:.1}">{body}</text>"#,
            row * line
        );
    };
    let area_ha = outcome.front.area() / 1e4;
    text(
        s,
        row,
        &format!("{:.0} min: {area_ha:.1} ha burned", outcome.minutes),
    );
    row += 1.0;
    text(
        s,
        row,
        &format!(
            "{} points, {:.2} km of fire line",
            outcome.front.points.len(),
            outcome.front.perimeter() / 1e3
        ),
    );
    row += 1.6;

    let mut present = [false; 14];
    for j in 0..ny {
        for i in 0..nx {
            present[usize::from(land.fuel(i, j))] = true;
        }
    }
    for (fuel, _) in present.iter().enumerate().filter(|(_, p)| **p) {
        let name = match fuel as u8 {
            NON_BURNABLE => "non-burnable".to_owned(),
            n => format!("{n}: {}", fuels::standard(n).map_or("", |m| m.name)),
        };
        let _ = writeln!(
            s,
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" stroke="#333" stroke-width="{:.2}"/>"##,
            (row - 0.75) * line,
            line * 0.9,
            line * 0.9,
            colour(fuel as u8),
            line * 0.03
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="{font:.1}">{name}</text>"#,
            x0 + line * 1.3,
            row * line
        );
        row += 1.1;
    }

    // Mean wind as an arrow.
    row += 1.5;
    let mut mean = [0.0, 0.0];
    for j in 0..ny {
        for i in 0..nx {
            let v = land.wind(i, j);
            mean[0] += v[0];
            mean[1] += v[1];
        }
    }
    let cells = (nx * ny).max(1) as f64;
    let mean = [mean[0] / cells, mean[1] / cells];
    let speed = mean[0].hypot(mean[1]);
    let centre = [x0 + line * 1.5, row * line];
    if speed > 0.0 {
        let u = [mean[0] / speed, -mean[1] / speed];
        let len = line * 1.3;
        let tip = [centre[0] + u[0] * len, centre[1] + u[1] * len];
        let tail = [centre[0] - u[0] * len, centre[1] - u[1] * len];
        let side = [-u[1] * len * 0.35, u[0] * len * 0.35];
        let back = [tip[0] - u[0] * len * 0.6, tip[1] - u[1] * len * 0.6];
        let _ = writeln!(
            s,
            r##"<path d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1}" fill="none" stroke="#1f4e9c" stroke-width="{:.1}"/>"##,
            tail[0],
            tail[1],
            tip[0],
            tip[1],
            back[0] + side[0],
            back[1] + side[1],
            tip[0],
            tip[1],
            back[0] - side[0],
            back[1] - side[1],
            line * 0.12
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="{font:.1}">mean wind {speed:.1} mi/h</text>"#,
        x0 + line * 3.3,
        row * line + font * 0.35
    );
    row += 2.0;
    let _ = writeln!(
        s,
        r##"<circle cx="{:.1}" cy="{:.1}" r="{:.1}" fill="#ffff00" stroke="#000" stroke-width="{:.2}"/>"##,
        x0 + line * 0.45,
        (row - 0.3) * line,
        line * 0.3,
        line * 0.04
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="{font:.1}">ignition</text>"#,
        x0 + line * 1.3,
        row * line
    );
}

/// Elevation contours at `levels` equal steps, by marching squares over the cell centres, as
/// SVG path data (unjoined segments).
fn contours(land: &Landscape, levels: usize) -> String {
    let (nx, ny) = land.size();
    let c = land.cell_m();
    let h = land.extent_m()[1];
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for j in 0..ny {
        for i in 0..nx {
            lo = lo.min(land.elevation(i, j));
            hi = hi.max(land.elevation(i, j));
        }
    }
    let mut d = String::new();
    if hi <= lo || nx < 2 || ny < 2 {
        return d;
    }
    let centre = |i: usize, j: usize| [(i as f64 + 0.5) * c, (j as f64 + 0.5) * c];
    for level in 1..levels {
        let z = lo + (hi - lo) * level as f64 / levels as f64;
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                // Corners counter-clockwise from the south-west one.
                let corners = [(i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)];
                let mut crossings = Vec::with_capacity(4);
                for k in 0..4 {
                    let (a, b) = (corners[k], corners[(k + 1) % 4]);
                    let (za, zb) = (land.elevation(a.0, a.1), land.elevation(b.0, b.1));
                    if (za < z) != (zb < z) {
                        let t = (z - za) / (zb - za);
                        let (pa, pb) = (centre(a.0, a.1), centre(b.0, b.1));
                        crossings.push([pa[0] + (pb[0] - pa[0]) * t, pa[1] + (pb[1] - pa[1]) * t]);
                    }
                }
                for pair in crossings.chunks_exact(2) {
                    let _ = write!(
                        d,
                        "M{:.1},{:.1}L{:.1},{:.1}",
                        pair[0][0],
                        h - pair[0][1],
                        pair[1][0],
                        h - pair[1][1]
                    );
                }
            }
        }
    }
    d
}
