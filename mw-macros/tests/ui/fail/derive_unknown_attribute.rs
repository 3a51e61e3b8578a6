// Both errors are reported at once.
#[derive(mw::Message)]
#[mw(rename = "Other")]
struct Point {
    x: f64,
    #[mw(default)]
    y: f64,
}

fn main() {}
