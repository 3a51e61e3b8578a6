//! Procedural macros of `mw-runtime`; use them through the runtime (`mw::Message`, ...).
