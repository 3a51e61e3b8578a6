//! Compile-pass cases: forms the macros must accept, each a small program that must also run
//! to its end. They are modules of this test, not trybuild cases: a single pass case makes
//! trybuild build and link its 40 compile-fail cases one cargo run at a time instead of
//! checking them all in one (`tests/ui.rs`).
// The cases keep methods that are not hooks, unused on purpose; a hook's shared type is
// `Vec<T>`, so `do_work` takes `&Vec<T>`; a failed run fails the case.
#![allow(dead_code, clippy::ptr_arg, clippy::unwrap_used)]

mod pass {
    pub mod generic_hooks;
    pub mod helpers_and_other_items;
}

#[test]
fn hooks_on_generic_types() {
    pass::generic_hooks::run();
}

#[test]
fn helpers_and_other_items_stay() {
    pass::helpers_and_other_items::run();
}
