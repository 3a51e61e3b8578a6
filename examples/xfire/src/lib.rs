//! Xfire: forest-fire front propagation as a Master/Worker program.
pub mod fuels;
pub mod rothermel;
