//! Compile-fail tests: one per error message the macros promise, with the exact output in
//! `ui/fail/*.stderr`; and compile-pass tests for forms the macros must accept.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
