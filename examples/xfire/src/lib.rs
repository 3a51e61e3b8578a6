//! Xfire: forest-fire front propagation as a Master/Worker program.
pub mod front;
pub mod fuels;
pub mod rothermel;
pub mod terrain;
