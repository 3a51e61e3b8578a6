//! The messages of heat-map:
//! - `Rows`: the task a worker receives
//! - `Block`: the result it sends back for one task
//! - `Plate`: the data every worker receives once per iteration, before its tasks
//!
//! `#[derive(Message)]` writes each type's compact binary codec. Change the fields freely: they
//! can be numbers, `bool`, `char`, `String`, `()`, tuples, `Vec<T>`, `[T; N]`, `Option<T>`,
//! `Box<T>` and other types of this file that derive `Message`.

use mw::Message;

/// A block of rows.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Rows {
    pub first: u32,
    pub count: u32,
}

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Block(pub u32, pub Vec<f64>);

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Plate {
    pub size: [u32; 2],
    pub cells: Vec<f64>,
    pub edges: Edges,
    pub source: Option<Source>,
}

#[derive(Message, Debug, Clone, PartialEq, Copy)]
pub enum Edges {
    Fixed(f64),
    Insulated,
}

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Source {
    pub at: (u32, u32),
    pub power: f64,
}
