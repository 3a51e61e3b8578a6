//! # Xfire
//!
//! Forest-fire front propagation as a Master/Worker program, after the Xfire application of
//! Jorba et al. (1998) that Morajko et al. (2005) tuned with MATE.
//!
//! The fire line is a closed polygon. At every step the master cuts it into segments (the tasks);
//! workers move each point to where Rothermel's (1972) surface fire spread model and the
//! elliptical fire shape take it over the local fuel, slope and wind; the master stitches the
//! segments back, cuts off loops, re-samples the line as it grows and cuts the next step. The
//! line gets longer every step, so the work per iteration grows and varies — a case for tuning
//! the number of workers and the chunk sizes while the program runs.
//!
//! - [`rothermel`]: the spread model, BehavePlus conventions, US units (ft, min, BTU, lb);
//! - [`fuels`]: the 13 standard fuel models (Albini 1976);
//! - [`terrain`]: the deterministic synthetic landscape;
//! - [`front`]: how the fire line moves (Richards' 1990 elliptical wavelets) and is re-sampled;
//! - [`app`]: the master and worker hooks, and the sequential reference run;
//! - [`messages`]: what travels between them; [`output`]: CSV and SVG; [`cli`]: the command line.
//!
//! ```
//! use fire_front::fuels;
//! use fire_front::rothermel::{FT_MIN_PER_MPH, FuelBed, Moisture};
//!
//! // Short grass, 5 mi/h midflame wind blowing up a 30 % slope.
//! let bed = FuelBed::new(fuels::standard(1).unwrap(), &Moisture::default());
//! let head = bed.head_upslope(5.0 * FT_MIN_PER_MPH, 0.30, false);
//! assert!((head.ros_ft_min - 120.334).abs() < 1e-3);
//! assert!((head.length_to_width - 1.659).abs() < 1e-3);
//! ```

pub mod app;
pub mod cli;
pub mod front;
pub mod fuels;
pub mod messages;
pub mod output;
pub mod rothermel;
pub mod terrain;
