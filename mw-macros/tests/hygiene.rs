//! The expansions do not depend on what the calling module has in scope: with the prelude's
//! names shadowed, derives and hook macros still compile (and work).
#![allow(dead_code, non_camel_case_types, clippy::upper_case_acronyms)]

struct Result;
struct Ok;
struct Err;
struct Vec;
struct Option;
struct Some;
struct None;
struct Box;
struct String;
struct Default;
struct Clone;
struct usize;
struct u8;
struct u64;

type Text = ::std::string::String;
type List<T> = ::std::vec::Vec<T>;

#[derive(mw::Message, Debug, PartialEq)]
struct Record {
    name: Text,
    values: List<f64>,
    maybe: ::std::option::Option<::std::boxed::Box<i32>>,
    #[mw(skip)]
    cache: ::std::option::Option<Text>,
}

#[derive(mw::Message, Debug, PartialEq, Clone)]
struct Point(f64, f64);

#[derive(mw::Message, Debug, PartialEq)]
struct Tagged<T> {
    id: u32,
    value: T,
}

#[derive(mw::Message, Debug, PartialEq, Clone)]
enum Event {
    Start { at: f64 },
    Move(Point),
    Stop,
}

struct Collector {
    events: List<Event>,
    seen: u32,
}

#[mw::master]
impl Collector {
    fn initialize(&mut self, _setup: &mut mw::Setup) -> mw::Result<()> {
        ::core::result::Result::Ok(())
    }

    fn partition(&mut self, iteration: &mw::Iteration) -> mw::Work<Tagged<u32>, Event> {
        let tasks = if iteration.index == 0 {
            ::std::mem::take(&mut self.events)
        } else {
            List::new()
        };
        mw::Work::new(Tagged { id: 1, value: 2 }, tasks)
    }

    fn recover(&mut self, _task: mw::TaskId, result: Record) {
        self.seen += ::core::primitive::u32::from(result.name == "moved");
    }

    fn end_iteration(&mut self, _iteration: &mw::Iteration) -> mw::Flow {
        mw::Flow::Continue
    }

    fn final_work(&mut self) -> mw::Result<()> {
        ::core::assert_eq!(self.seen, 1);
        ::core::result::Result::Ok(())
    }
}

struct Mover;

#[mw::worker]
impl Mover {
    fn initialize(&mut self, _setup: &mw::WorkerSetup) -> mw::Result<()> {
        ::core::result::Result::Ok(())
    }

    fn do_work(&mut self, _shared: &Tagged<u32>, event: Event) -> Record {
        let name = match event {
            Event::Move(_) => "moved",
            Event::Start { .. } | Event::Stop => "other",
        };
        Record {
            name: name.into(),
            values: List::new(),
            maybe: ::std::option::Option::None,
            cache: ::std::option::Option::None,
        }
    }

    fn final_work(&mut self) -> mw::Result<()> {
        ::core::result::Result::Ok(())
    }
}

#[test]
fn expansions_are_hygienic() {
    let record = Record {
        name: "x".into(),
        values: ::std::vec![1.0],
        maybe: ::std::option::Option::Some(::std::boxed::Box::new(3)),
        cache: ::std::option::Option::None,
    };
    let bytes = mw::codec::encode(&record);
    ::core::assert_eq!(
        mw::codec::decode::<Record>(&bytes).ok(),
        ::std::option::Option::Some(record)
    );

    let args = mw::RunArgs {
        workers: ::std::option::Option::Some(2),
        backend: ::std::option::Option::Some(mw::BackendChoice::Local),
        ..::core::default::Default::default()
    };
    let events = ::std::vec![
        Event::Start { at: 0.0 },
        Event::Move(Point(1.0, 2.0)),
        Event::Stop
    ];
    let report = mw::run_with(&args, move || Collector { events, seen: 0 }, || Mover);
    ::core::assert!(report.is_ok());
}
