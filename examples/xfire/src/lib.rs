//! Xfire: forest-fire front propagation as a Master/Worker program.
pub mod app;
pub mod cli;
pub mod front;
pub mod fuels;
pub mod messages;
pub mod output;
pub mod rothermel;
pub mod terrain;
