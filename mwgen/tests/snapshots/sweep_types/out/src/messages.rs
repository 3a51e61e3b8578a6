//! The messages of points:
//! - `Point`: the task a worker receives
//! - `Value`: the result it sends back for one task
//! - `Params`: the data every worker receives once per iteration, before its tasks
//!
//! `#[derive(Message)]` writes each type's compact binary codec. Change the fields freely: they
//! can be numbers, `bool`, `char`, `String`, `()`, tuples, `Vec<T>`, `[T; N]`, `Option<T>`,
//! `Box<T>` and other types of this file that derive `Message`.

use mw::Message;

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Point {
    pub index: u32,
    pub x: f64,
}

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Value {
    pub index: u32,
    pub v: f64,
}

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Params {
    pub scale: f64,
}
