//! The messages of bag:
//! - `Task`: the task a worker receives
//! - `Answer`: the result it sends back for one task
//!
//! `#[derive(Message)]` writes each type's compact binary codec. Change the fields freely: they
//! can be numbers, `bool`, `char`, `String`, `()`, tuples, `Vec<T>`, `[T; N]`, `Option<T>`,
//! `Box<T>` and other types of this file that derive `Message`.

use mw::Message;

/// A run of consecutive numbers: `first`, `first + 1`, ..., `first + count - 1`.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Task {
    pub first: u64,
    pub count: u64,
}

/// A worker's answer for one task: the sum of the squares of its numbers.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Answer {
    pub sum: u64,
}
