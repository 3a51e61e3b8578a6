#[derive(mw::Message)]
#[mw(skip)]
struct Point {
    #[mw(crate = "mw")]
    x: f64,
}

#[derive(mw::Message)]
enum Shape {
    #[mw(skip)]
    Circle(f64),
}

fn main() {}
