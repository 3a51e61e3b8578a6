//! The 13 standard fire behavior fuel models (Albini 1976; Anderson 1982).
//!
//! Loads are oven-dry lb/ft², as BehavePlus stores them (Albini's t/ac × 2000/43560, rounded to
//! three decimals); depths in ft; surface-area-to-volume ratios (SAV) in 1/ft; moisture of
//! extinction as a fraction. Every model shares the BehavePlus particle constants below, and the
//! 10-h and 100-h classes always have SAV 109/ft and 30/ft.
//!
//! The live load of model 2 is herbaceous; that of models 4, 5, 7 and 10 is woody (so with
//! `--moisture 6,7,8,60,90` model 2's live fuel is at 60 % and model 4's at 90 %).

/// Low heat content of every particle, BTU/lb.
pub const HEAT_CONTENT_BTU_LB: f64 = 8000.0;
/// Oven-dry particle density, lb/ft³.
pub const PARTICLE_DENSITY_LB_FT3: f64 = 32.0;
/// Total mineral content, fraction of dry weight.
pub const TOTAL_MINERAL: f64 = 0.0555;
/// Effective (silica-free) mineral content, fraction of dry weight.
pub const EFFECTIVE_MINERAL: f64 = 0.010;
/// SAV of the 10-h dead class, 1/ft.
pub const SAV_10H: f64 = 109.0;
/// SAV of the 100-h dead class, 1/ft.
pub const SAV_100H: f64 = 30.0;

/// A fuel model's fuel-bed description.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FuelModel {
    /// The model's number, 1–13 for the standard set.
    pub number: u8,
    /// Short name, as in Anderson (1982).
    pub name: &'static str,
    /// Fuel bed depth, ft.
    pub depth_ft: f64,
    /// Dead fuel moisture of extinction, fraction.
    pub dead_extinction: f64,
    /// Dead 1-h, 10-h and 100-h loads, lb/ft².
    pub dead_load: [f64; 3],
    /// Live herbaceous load, lb/ft².
    pub herb_load: f64,
    /// Live woody load, lb/ft².
    pub woody_load: f64,
    /// SAV of the 1-h dead class, 1/ft.
    pub sav_1h: f64,
    /// SAV of the live class (herbaceous or woody, whichever the model has), 1/ft.
    pub sav_live: f64,
}

impl FuelModel {
    /// Whether the model has any live fuel.
    pub fn has_live(&self) -> bool {
        self.herb_load > 0.0 || self.woody_load > 0.0
    }
}

const fn model(
    number: u8,
    name: &'static str,
    depth_ft: f64,
    dead_extinction: f64,
    loads: [f64; 5],
    sav: [f64; 2],
) -> FuelModel {
    FuelModel {
        number,
        name,
        depth_ft,
        dead_extinction,
        dead_load: [loads[0], loads[1], loads[2]],
        herb_load: loads[3],
        woody_load: loads[4],
        sav_1h: sav[0],
        sav_live: sav[1],
    }
}

/// The 13 standard models, index `n - 1` for model `n` (Albini 1976, table 5; BehavePlus).
///
/// Columns: number, name, depth (ft), dead extinction, loads (1-h, 10-h, 100-h, live herbaceous,
/// live woody; lb/ft²), SAV (1-h, live; 1/ft). Albini lists a live SAV of 1550/ft for model 7;
/// BehavePlus uses 1500/ft, as here.
#[rustfmt::skip]
pub const STANDARD: [FuelModel; 13] = [
    model(1, "short grass", 1.0, 0.12, [0.034, 0.0, 0.0, 0.0, 0.0], [3500.0, 0.0]),
    model(2, "timber grass and understory", 1.0, 0.15, [0.092, 0.046, 0.023, 0.023, 0.0], [3000.0, 1500.0]),
    model(3, "tall grass", 2.5, 0.25, [0.138, 0.0, 0.0, 0.0, 0.0], [1500.0, 0.0]),
    model(4, "chaparral", 6.0, 0.20, [0.230, 0.184, 0.092, 0.0, 0.230], [2000.0, 1500.0]),
    model(5, "brush", 2.0, 0.20, [0.046, 0.023, 0.0, 0.0, 0.092], [2000.0, 1500.0]),
    model(6, "dormant brush, hardwood slash", 2.5, 0.25, [0.069, 0.115, 0.092, 0.0, 0.0], [1750.0, 0.0]),
    model(7, "southern rough", 2.5, 0.40, [0.052, 0.086, 0.069, 0.0, 0.017], [1750.0, 1500.0]),
    model(8, "closed timber litter", 0.2, 0.30, [0.069, 0.046, 0.115, 0.0, 0.0], [2000.0, 0.0]),
    model(9, "hardwood litter", 0.2, 0.25, [0.134, 0.019, 0.007, 0.0, 0.0], [2500.0, 0.0]),
    model(10, "timber litter and understory", 1.0, 0.25, [0.138, 0.092, 0.230, 0.0, 0.092], [2000.0, 1500.0]),
    model(11, "light logging slash", 1.0, 0.15, [0.069, 0.207, 0.253, 0.0, 0.0], [1500.0, 0.0]),
    model(12, "medium logging slash", 2.3, 0.20, [0.184, 0.644, 0.759, 0.0, 0.0], [1500.0, 0.0]),
    model(13, "heavy logging slash", 3.0, 0.25, [0.322, 1.058, 1.288, 0.0, 0.0], [1500.0, 0.0]),
];

/// Standard model `number` (1–13), or `None`.
pub fn standard(number: u8) -> Option<&'static FuelModel> {
    STANDARD.get(usize::from(number).checked_sub(1)?)
}
