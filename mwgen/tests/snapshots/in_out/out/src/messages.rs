//! The messages of fire:
//! - `Segment`: the task a worker receives
//! - `Advanced`: the result it sends back for one task
//!
//! `#[derive(Message)]` writes each type's compact binary codec. Change the fields freely: they
//! can be numbers, `bool`, `char`, `String`, `()`, tuples, `Vec<T>`, `[T; N]`, `Option<T>`,
//! `Box<T>` and other types of this file that derive `Message`.

use mw::Message;

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Segment {
    pub first: u32,
    pub points: Vec<[f64; 2]>,
}

#[derive(Message, Debug, Clone, PartialEq)]
pub struct Advanced {
    pub first: u32,
    pub points: Vec<[f64; 2]>,
}
