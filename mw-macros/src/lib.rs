//! Procedural macros of `mw-runtime`: `#[derive(Message)]`, `#[master]` and `#[worker]`.
//!
//! Use them through the runtime, which re-exports them next to the traits they implement
//! (`mw::Message`, `mw::master`, `mw::worker`); this crate is an implementation detail.
//!
//! ```
//! use mw::prelude::*;
//!
//! /// A body of an N-Body simulation: sent as 40 bytes, decoded in bulk.
//! #[derive(Message, Clone, Debug, PartialEq)]
//! struct Body { m: f64, x: f64, y: f64, vx: f64, vy: f64 }
//!
//! struct Sum { bodies: Vec<Body>, total: f64 }
//!
//! #[mw::master]
//! impl Sum {
//!     fn partition(&mut self, it: &Iteration) -> Work<(), Body> {
//!         Work::tasks(if it.index == 0 { self.bodies.clone() } else { Vec::new() })
//!     }
//!     fn recover(&mut self, _task: TaskId, mass: f64) {
//!         self.total += mass;
//!     }
//! }
//!
//! #[derive(Default)]
//! struct Mass;
//!
//! #[mw::worker]
//! impl Mass {
//!     fn do_work(&mut self, _shared: &(), body: &Body) -> f64 {
//!         body.m
//!     }
//! }
//!
//! let bodies = vec![Body { m: 1.5, x: 0.0, y: 0.0, vx: 0.0, vy: 0.0 }; 10];
//! let args = RunArgs { workers: Some(2), backend: Some(BackendChoice::Local), ..RunArgs::default() };
//! mw::run_with(&args, || Sum { bodies, total: 0.0 }, Mass::default)?;
//! # Ok::<(), mw::Error>(())
//! ```
//!
//! # How the expansions name the runtime
//! Generated code refers to the runtime by absolute paths (`::mw::__private::Message`), so it
//! compiles whatever the calling module has in scope. The name of the runtime is read from the
//! caller's `Cargo.toml`, which generated projects write as
//! `mw = { package = "mw-runtime", ... }`; `crate = "path"` overrides it
//! (`#[mw(crate = "...")]` on a derive, `#[mw::master(crate = "...")]` on the hooks).
//!
//! The code is split as in serde and thiserror: `lib.rs` parses and hands over; each macro has
//! a module that reads its input, checks it (collecting every error, then emitting a fallback
//! impl so that the errors are not followed by a cascade of unrelated ones) and writes the
//! impl.

mod ctxt;
mod hooks;
mod message;
mod runtime_path;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `Message`: a compact binary codec for a struct or an enum.
///
/// Fields are encoded in declaration order with their own `Message` encoding; an enum writes the
/// index of its variant (a varint: one byte below 128 variants) then the variant's fields. A
/// type parameter used by a sent field must implement `Message` (the bound is added).
///
/// The constants are exact: `MIN_ENCODED_LEN` is the sum of the fields' (for an enum, the
/// shortest tag plus variant); `FIXED_ENCODED_LEN` is set when every field has one (for an enum,
/// when every variant comes to the same size, tag included). A struct made only of fixed-size
/// fields (numbers, arrays of them, nested such structs) decodes a `Vec` of itself with one
/// length check for the whole run, and `encoded_len` of such a `Vec` is O(1).
///
/// Decoding errors name the type and field (`Body.x`, tuple fields by index: `Pair.1`, enum
/// fields with their variant: `Shape.Circle.radius`); an unknown variant tag is
/// `DecodeErrorKind::UnknownVariant`.
///
/// # Attributes
/// On the type:
/// - `#[mw(crate = "path")]`: the path of the runtime, for crates that reach it under a name
///   that is not among their dependencies (a re-export: `#[mw(crate = "my_facade::mw")]`). By
///   default the name is read from the calling package's `Cargo.toml`, so a renamed dependency
///   (`mw = { package = "mw-runtime", ... }`) needs nothing.
/// - `#[mw(bound = "T: Message + Clone")]`: the `where` predicates of the impl, replacing the
///   inferred `T: Message` bounds.
///
/// On a field:
/// - `#[mw(skip)]`: the field is not sent; decoding sets it to `Default::default()`.
/// - `#[mw(recursive)]`: the field's type contains this type again through a `Box`, by way of
///   another type (`enum A { B(Box<B>) }` with `enum B { A(Box<A>), End }`): its size is left
///   out of the constants so that they do not refer to themselves. Direct recursion
///   (`Box<Self>`, `Box<Expr>` inside `Expr`) is seen without it.
///
/// # Examples
/// ```
/// use mw::{Message, codec};
///
/// #[derive(Message, Debug, PartialEq)]
/// enum Shape {
///     Circle { radius: f64 },
///     Polygon(Vec<[f64; 2]>),
///     Empty,
/// }
///
/// let shape = Shape::Polygon(vec![[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]);
/// let bytes = codec::encode(&shape);
/// assert_eq!(bytes.len(), shape.encoded_len());
/// assert_eq!(codec::decode::<Shape>(&bytes)?, shape);
///
/// let error = codec::decode::<Shape>(&bytes[..5]).unwrap_err();
/// assert!(error.to_string().contains("Shape.Polygon.0"), "{error}");
/// # Ok::<(), mw::DecodeError>(())
/// ```
#[proc_macro_derive(Message, attributes(mw))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    message::derive(&input).into()
}

/// Writes the `Master` impl of a type from the hook methods of an inherent impl block.
///
/// The block keeps its methods; the attribute adds `impl Master for T` whose methods call them.
/// `Task`, `Result` and `Shared` are read from the signatures:
///
/// ```text
/// fn initialize(&mut self, setup: &mut mw::Setup) -> mw::Result<()>         // optional
/// fn partition(&mut self, iteration: &mw::Iteration) -> mw::Work<Shared, Task>
/// fn recover(&mut self, task: mw::TaskId, result: Result)
/// fn end_iteration(&mut self, iteration: &mw::Iteration) -> mw::Flow        // optional
/// fn final_work(&mut self) -> mw::Result<()>                                 // optional
/// ```
///
/// Other methods stay in the block as they are, unless their name looks like a misspelt hook
/// (`partiton`, `finalWork`): that is an error that suggests the hook (a helper with such a name
/// can go in another impl block). A wrong signature or a missing required hook is an error that
/// shows the expected signature. That master and worker exchange the same types is checked
/// where they meet, in `mw::run`.
///
/// # Attributes
/// - `#[mw::master(crate = "path")]`: the path of the runtime, as for `#[mw(crate = "...")]` on
///   `#[derive(Message)]`.
///
/// # Examples
/// See the crate documentation.
#[proc_macro_attribute]
pub fn master(args: TokenStream, input: TokenStream) -> TokenStream {
    hooks::expand(hooks::Role::Master, args.into(), input.into()).into()
}

/// Writes the `Worker` impl of a type from the hook methods of an inherent impl block.
///
/// As [`master`](macro@master), with the worker's hooks:
///
/// ```text
/// fn initialize(&mut self, setup: &mw::WorkerSetup) -> mw::Result<()>   // optional
/// fn do_work(&mut self, shared: &Shared, task: &Task) -> Result
/// fn final_work(&mut self) -> mw::Result<()>                             // optional
/// ```
///
/// `do_work` may also take the task by value (`task: Task`); it then receives a clone, so `Task`
/// must be `Clone` (the runtime keeps the original to re-run it elsewhere should the worker
/// panic).
///
/// # Attributes
/// - `#[mw::worker(crate = "path")]`: the path of the runtime.
#[proc_macro_attribute]
pub fn worker(args: TokenStream, input: TokenStream) -> TokenStream {
    hooks::expand(hooks::Role::Worker, args.into(), input.into()).into()
}
