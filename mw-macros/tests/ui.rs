//! Compile-fail tests: one per error message the macros promise, with the exact output in
//! `ui/fail/*.stderr`. The forms the macros must accept are in `tests/pass.rs`: with no pass
//! case here, trybuild checks every case in one `cargo check` instead of building them one by
//! one.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
}
