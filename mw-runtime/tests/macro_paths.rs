//! The derive and the hook macros under the runtime's own name (`mw_runtime`, not renamed), and
//! with the path given explicitly through `crate = "..."`. The renamed case (`mw`, as generated
//! projects have it) is tested in `mw-macros`.

use mw_runtime::codec;
use mw_runtime::prelude::*;

#[derive(Message, Debug, Clone, PartialEq)]
struct Plain {
    id: u32,
    name: String,
}

/// The runtime reached through a re-export, named explicitly.
mod facade {
    pub use mw_runtime as runtime;
}

#[derive(facade::runtime::Message, Debug, Clone, PartialEq)]
#[mw(crate = "crate::facade::runtime")]
enum Routed {
    One(u8),
    Two { a: u16, b: u16 },
}

#[derive(facade::runtime::Message, Debug, Clone, PartialEq)]
#[mw(crate = crate::facade::runtime)]
struct BarePath(i64);

struct Squares {
    total: u64,
}

#[mw_runtime::master]
impl Squares {
    fn partition(&mut self, iteration: &Iteration) -> Work<(), Plain> {
        Work::tasks(if iteration.index == 0 {
            (1..=4)
                .map(|id| Plain {
                    id,
                    name: String::new(),
                })
                .collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, square: Routed) {
        if let Routed::Two { a, .. } = square {
            self.total += u64::from(a);
        }
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        assert_eq!(self.total, 1 + 4 + 9 + 16);
        Ok(())
    }
}

#[derive(Default)]
struct Squarer;

#[facade::runtime::worker(crate = "crate::facade::runtime")]
impl Squarer {
    fn do_work(&mut self, _shared: &(), task: &Plain) -> Routed {
        let square = u16::try_from(task.id * task.id).expect("small");
        Routed::Two { a: square, b: 0 }
    }
}

#[test]
fn derives_under_both_paths() {
    let plain = Plain {
        id: 3,
        name: "three".into(),
    };
    assert_eq!(codec::decode::<Plain>(&codec::encode(&plain)), Ok(plain));
    let routed = Routed::One(4);
    assert_eq!(codec::decode::<Routed>(&codec::encode(&routed)), Ok(routed));
    assert_eq!(<BarePath as Message>::FIXED_ENCODED_LEN, Some(8));
}

#[test]
fn hooks_under_both_paths() {
    let args = RunArgs {
        workers: Some(2),
        backend: Some(BackendChoice::Local),
        ..RunArgs::default()
    };
    mw_runtime::run_with(&args, || Squares { total: 0 }, Squarer::default).expect("runs");
}
