//! The landscape the fire burns over: a grid of cells, each with a fuel model (or none), an
//! elevation and a midflame wind.
//!
//! Coordinates are metres, `x` east and `y` north, with the origin at the grid's south-west
//! corner; cell `(i, j)` covers `[i·c, (i+1)·c) × [j·c, (j+1)·c)` for a cell size `c`. Slope is
//! the elevation gradient from central differences of the cell-centre elevations. Outside the
//! grid nothing burns.
//!
//! [`Landscape::synthetic`] builds a deterministic landscape from a seed, so the master and every
//! worker (every MPI rank) rebuild the same terrain from the command line instead of shipping it.

use mw::random::SplitMix64;

use crate::fuels;
use crate::rothermel::{FT_MIN_PER_MPH, FuelBed, Moisture, Spread};

/// The fuel code of a cell where nothing burns (rock, water, roads).
pub const NON_BURNABLE: u8 = 0;

/// What the synthetic landscape is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Cells along each side.
    pub grid: usize,
    /// Side of a cell, m.
    pub cell_m: f64,
    /// Seed of the terrain, fuels and wind.
    pub seed: u64,
    /// Mean midflame wind speed, mi/h.
    pub wind_mph: f64,
    /// Direction the wind blows toward, degrees clockwise from north.
    pub wind_toward_deg: f64,
    /// Fuel moistures, the same everywhere.
    pub moisture: Moisture,
    /// Cap the effective wind at 0.9·I_R.
    pub wind_limit: bool,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            grid: 160,
            cell_m: 30.0,
            seed: 1,
            wind_mph: 6.0,
            wind_toward_deg: 60.0,
            moisture: Moisture::default(),
            wind_limit: false,
        }
    }
}

/// The raw grids of a landscape, row-major (`j·nx + i`).
#[derive(Debug, Clone, PartialEq)]
pub struct Layers {
    pub nx: usize,
    pub ny: usize,
    /// Side of a cell, m.
    pub cell_m: f64,
    /// Fuel code per cell: 0 for non-burnable, else a standard model 1–13.
    pub fuel: Vec<u8>,
    /// Elevation per cell centre, m.
    pub elevation: Vec<f64>,
    /// Midflame wind per cell, mi/h, pointing where it blows to.
    pub wind: Vec<[f64; 2]>,
}

/// A grid of fuel, elevation and wind.
#[derive(Debug, Clone)]
pub struct Landscape {
    nx: usize,
    ny: usize,
    cell_m: f64,
    fuel: Vec<u8>,
    elevation: Vec<f64>,
    /// Midflame wind, mi/h, pointing where it blows to.
    wind: Vec<[f64; 2]>,
    /// Elevation gradient (rise over run), pointing upslope.
    gradient: Vec<[f64; 2]>,
    /// Fuel beds at the scenario's moisture, index = fuel code (0 never burns).
    beds: Vec<FuelBed>,
    wind_limit: bool,
    ignition: [f64; 2],
}

impl Landscape {
    /// A landscape from its layers; the ignition point is the centre.
    ///
    /// # Panics
    /// When a layer's length is not `nx·ny` or a fuel code is above 13 (programming errors).
    pub fn from_layers(layers: Layers, moisture: &Moisture, wind_limit: bool) -> Landscape {
        let Layers {
            nx,
            ny,
            cell_m,
            fuel,
            elevation,
            wind,
        } = layers;
        let cells = nx * ny;
        assert!(fuel.len() == cells && elevation.len() == cells && wind.len() == cells);
        assert!(
            fuel.iter()
                .all(|&f| usize::from(f) <= fuels::STANDARD.len())
        );
        let beds = std::iter::once(FuelBed::new(&INERT, moisture))
            .chain(fuels::STANDARD.iter().map(|m| FuelBed::new(m, moisture)))
            .collect();
        let mut land = Landscape {
            nx,
            ny,
            cell_m,
            fuel,
            elevation,
            wind,
            gradient: vec![[0.0; 2]; cells],
            beds,
            wind_limit,
            ignition: [nx as f64 * cell_m / 2.0, ny as f64 * cell_m / 2.0],
        };
        land.gradient = land.compute_gradient();
        land
    }

    /// Flat, one fuel everywhere, one wind vector (mi/h) everywhere.
    pub fn uniform(
        n: usize,
        cell_m: f64,
        fuel: u8,
        wind_mph: [f64; 2],
        moisture: &Moisture,
    ) -> Self {
        let layers = Layers {
            nx: n,
            ny: n,
            cell_m,
            fuel: vec![fuel; n * n],
            elevation: vec![0.0; n * n],
            wind: vec![wind_mph; n * n],
        };
        Landscape::from_layers(layers, moisture, false)
    }

    /// Sets the fuel of cell `(i, j)`.
    pub fn set_fuel(&mut self, i: usize, j: usize, fuel: u8) {
        let k = j * self.nx + i;
        self.fuel[k] = fuel;
    }

    /// Moves the ignition point.
    pub fn set_ignition(&mut self, p: [f64; 2]) {
        self.ignition = p;
    }

    /// Cells along x and y.
    pub fn size(&self) -> (usize, usize) {
        (self.nx, self.ny)
    }

    /// Side of a cell, m.
    pub fn cell_m(&self) -> f64 {
        self.cell_m
    }

    /// Width and height, m.
    pub fn extent_m(&self) -> [f64; 2] {
        [self.nx as f64 * self.cell_m, self.ny as f64 * self.cell_m]
    }

    /// Where the fire starts.
    pub fn ignition(&self) -> [f64; 2] {
        self.ignition
    }

    /// Fuel code of cell `(i, j)`.
    pub fn fuel(&self, i: usize, j: usize) -> u8 {
        self.fuel[j * self.nx + i]
    }

    /// Elevation of cell `(i, j)`, m.
    pub fn elevation(&self, i: usize, j: usize) -> f64 {
        self.elevation[j * self.nx + i]
    }

    /// Midflame wind of cell `(i, j)`, mi/h, pointing where it blows to.
    pub fn wind(&self, i: usize, j: usize) -> [f64; 2] {
        self.wind[j * self.nx + i]
    }

    /// Index of the cell holding `p`, `None` outside the grid.
    fn cell_index(&self, p: [f64; 2]) -> Option<usize> {
        let (i, j) = (p[0] / self.cell_m, p[1] / self.cell_m);
        if !(i >= 0.0 && j >= 0.0) {
            return None;
        }
        let (i, j) = (i as usize, j as usize);
        (i < self.nx && j < self.ny).then_some(j * self.nx + i)
    }

    /// Whether the cell under `p` can burn (false outside the grid).
    pub fn is_burnable(&self, p: [f64; 2]) -> bool {
        self.cell_index(p)
            .is_some_and(|k| self.fuel[k] != NON_BURNABLE)
    }

    /// The head fire at `p` (Rothermel with the cell's fuel, wind and slope); `None` where
    /// nothing burns. Computed on every call: this is the workers' physics.
    pub fn spread_at(&self, p: [f64; 2]) -> Option<Spread> {
        let k = self.cell_index(p)?;
        let fuel = self.fuel[k];
        if fuel == NON_BURNABLE {
            return None;
        }
        let w = self.wind[k];
        let wind = [w[0] * FT_MIN_PER_MPH, w[1] * FT_MIN_PER_MPH];
        Some(self.beds[usize::from(fuel)].spread(wind, self.gradient[k], self.wind_limit))
    }

    fn compute_gradient(&self) -> Vec<[f64; 2]> {
        let (nx, ny) = (self.nx, self.ny);
        let z = |i: usize, j: usize| self.elevation[j * nx + i];
        let mut gradient = vec![[0.0; 2]; nx * ny];
        for j in 0..ny {
            for i in 0..nx {
                let (i0, i1) = (i.saturating_sub(1), (i + 1).min(nx - 1));
                let (j0, j1) = (j.saturating_sub(1), (j + 1).min(ny - 1));
                let dx = if i1 > i0 {
                    (z(i1, j) - z(i0, j)) / ((i1 - i0) as f64 * self.cell_m)
                } else {
                    0.0
                };
                let dy = if j1 > j0 {
                    (z(i, j1) - z(i, j0)) / ((j1 - j0) as f64 * self.cell_m)
                } else {
                    0.0
                };
                gradient[j * nx + i] = [dx, dy];
            }
        }
        gradient
    }

    /// A deterministic landscape: Gaussian hills, Voronoi fuel patches, a river with two fords,
    /// a few lakes and bare ridge tops, and a wind that turns and strengthens over the hills. The
    /// ignition point is the centre, in a clearing of timber grass (model 2).
    pub fn synthetic(s: &Scenario) -> Landscape {
        let n = s.grid.max(4);
        let side = n as f64 * s.cell_m;
        let mut rng = SplitMix64::new(s.seed);
        let centre = |i: usize| (i as f64 + 0.5) * s.cell_m;

        // Elevation: hills of 10–35 % height-to-radius ratio.
        let hills: Vec<[f64; 4]> = (0..6 + n / 40)
            .map(|_| {
                let radius = side * rng.range(0.08, 0.25);
                let height =
                    radius * rng.range(0.10, 0.35) * if rng.next_unit() < 0.8 { 1.0 } else { -0.6 };
                [
                    rng.next_unit() * side,
                    rng.next_unit() * side,
                    radius,
                    height,
                ]
            })
            .collect();
        let mut elevation = Vec::with_capacity(n * n);
        for j in 0..n {
            for i in 0..n {
                let (x, y) = (centre(i), centre(j));
                let z: f64 = hills
                    .iter()
                    .map(|&[hx, hy, r, h]| {
                        h * (-((x - hx).powi(2) + (y - hy).powi(2)) / (2.0 * r * r)).exp()
                    })
                    .sum();
                elevation.push(500.0 + z);
            }
        }

        // Fuel: Voronoi patches drawn from a weighted list of models.
        const PALETTE: [u8; 20] = [
            1, 1, 2, 2, 2, 3, 4, 5, 5, 6, 6, 8, 8, 9, 9, 9, 10, 10, 10, 11,
        ];
        let patches: Vec<([f64; 2], u8)> = (0..((n / 12).pow(2)).max(8))
            .map(|_| {
                let p = [rng.next_unit() * side, rng.next_unit() * side];
                (p, PALETTE[rng.below(PALETTE.len())])
            })
            .collect();
        let mut fuel = Vec::with_capacity(n * n);
        for j in 0..n {
            for i in 0..n {
                let (x, y) = (centre(i), centre(j));
                let nearest = patches
                    .iter()
                    .min_by(|a, b| {
                        let da = (a.0[0] - x).powi(2) + (a.0[1] - y).powi(2);
                        let db = (b.0[0] - x).powi(2) + (b.0[1] - y).powi(2);
                        da.total_cmp(&db)
                    })
                    .map_or(1, |p| p.1);
                fuel.push(nearest);
            }
        }

        // Non-burnable features: bare ridge tops, a meandering river with two fords, lakes.
        let mut sorted = elevation.clone();
        sorted.sort_by(f64::total_cmp);
        let ridge = sorted[sorted.len() * 97 / 100];
        let (river_y, river_amp, river_phase) = (
            side * rng.range(0.2, 0.3),
            side * 0.06,
            rng.next_unit() * 6.3,
        );
        let fords = [rng.range(0.1, 0.45) * side, rng.range(0.55, 0.9) * side];
        let lakes: Vec<[f64; 3]> = (0..2 + n / 80)
            .map(|_| {
                [
                    rng.next_unit() * side,
                    rng.next_unit() * side,
                    s.cell_m * rng.range(2.0, 5.0),
                ]
            })
            .collect();
        for j in 0..n {
            for i in 0..n {
                let (x, y) = (centre(i), centre(j));
                let k = j * n + i;
                let meander = river_y + river_amp * (x / side * 9.0 + river_phase).sin();
                let in_river = (y - meander).abs() < s.cell_m * 0.9
                    && fords.iter().all(|f| (x - f).abs() > 2.0 * s.cell_m);
                let in_lake = lakes
                    .iter()
                    .any(|&[lx, ly, r]| (x - lx).powi(2) + (y - ly).powi(2) < r * r);
                if in_river || in_lake || elevation[k] > ridge {
                    fuel[k] = NON_BURNABLE;
                }
            }
        }

        // A grassy clearing around the ignition point, so the fire takes hold.
        let ignition = [side / 2.0, side / 2.0];
        let clear = (5.0 * s.cell_m).max(150.0);
        for j in 0..n {
            for i in 0..n {
                let (x, y) = (centre(i), centre(j));
                if (x - ignition[0]).powi(2) + (y - ignition[1]).powi(2) < clear * clear {
                    fuel[j * n + i] = 2;
                }
            }
        }

        // Wind: ±20° of smooth turning; stronger on high ground, weaker in hollows.
        let mean = elevation.iter().sum::<f64>() / elevation.len() as f64;
        let spread = (elevation.iter().map(|z| (z - mean).powi(2)).sum::<f64>()
            / elevation.len() as f64)
            .sqrt()
            .max(1.0);
        let (f1, f2, phase) = (
            rng.range(0.5, 1.5),
            rng.range(0.5, 1.5),
            rng.next_unit() * 6.3,
        );
        let mut wind = Vec::with_capacity(n * n);
        for j in 0..n {
            for i in 0..n {
                let (x, y) = (centre(i) / side, centre(j) / side);
                let turn = 20f64.to_radians() * (6.3 * (f1 * x + f2 * y) + phase).sin();
                let azimuth = s.wind_toward_deg.to_radians() + turn;
                let factor = (1.0 + 0.25 * (elevation[j * n + i] - mean) / spread).clamp(0.5, 1.6);
                let speed = s.wind_mph * factor;
                wind.push([speed * azimuth.sin(), speed * azimuth.cos()]);
            }
        }

        let layers = Layers {
            nx: n,
            ny: n,
            cell_m: s.cell_m,
            fuel,
            elevation,
            wind,
        };
        Landscape::from_layers(layers, &s.moisture, s.wind_limit)
    }
}

/// Stand-in for fuel code 0: no fuel at all.
const INERT: fuels::FuelModel = fuels::FuelModel {
    number: 0,
    name: "non-burnable",
    depth_ft: 1.0,
    dead_extinction: 0.1,
    dead_load: [0.0; 3],
    herb_load: 0.0,
    woody_load: 0.0,
    sav_1h: 0.0,
    sav_live: 0.0,
};

/// The draws the terrain is made of, from the runtime's SplitMix64: the same on every platform.
trait Draws {
    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: f64, hi: f64) -> f64;
    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize;
}

impl Draws for SplitMix64 {
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_unit()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_unit() * n as f64) as usize % n.max(1)
    }
}
