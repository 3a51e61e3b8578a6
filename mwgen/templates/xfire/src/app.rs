//! The Master/Worker program: the master cuts the fire line into segments, workers advance
//! them, the master stitches them back, re-samples the line and cuts the next step.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use mw::{Flow, Iteration, Master, TaskId, Work, Worker};

use crate::front::{Front, Point, advance_run};
use crate::messages::{Advanced, Segment, Step};
use crate::output;
use crate::terrain::Landscape;

/// The most points the fire line may have; past it the run stops with an error rather than
/// exhausting memory.
pub const MAX_POINTS: usize = 4_000_000;

/// How the fire line is simulated.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Steps to simulate.
    pub steps: usize,
    /// Length of a step, min.
    pub dt_min: f64,
    /// Points per task (the last task of a step may hold fewer).
    pub segment_points: usize,
    /// Largest distance between neighbouring points, m.
    pub spacing_m: f64,
    /// Radius of the ignition circle, m.
    pub ignition_radius_m: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            steps: 50,
            dt_min: 2.0,
            segment_points: 64,
            spacing_m: 10.0,
            ignition_radius_m: 30.0,
        }
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepStats {
    /// Points advanced (the step's work).
    pub points: usize,
    /// Tasks the step was cut into.
    pub tasks: usize,
    /// Points a non-burnable cell stopped.
    pub blocked: u32,
    /// Burned area after the step, m².
    pub area_m2: f64,
}

/// The finished simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The fire line after the last step.
    pub front: Front,
    /// One entry per step.
    pub steps: Vec<StepStats>,
    /// Simulated time, min.
    pub minutes: f64,
}

/// The initial fire line: a circle around the landscape's ignition point.
pub fn ignition_front(land: &Landscape, params: &SimParams) -> Front {
    let mut front = Front::circle(land.ignition(), params.ignition_radius_m, params.spacing_m);
    // Points of the circle that fall on non-burnable ground never move; keep them on burnable.
    front.points.retain(|&p| land.is_burnable(p));
    front
}

/// The same simulation on one thread, step by step: the reference for the parallel run.
pub fn simulate(land: &Landscape, params: &SimParams) -> Outcome {
    let mut front = ignition_front(land, params);
    let mut steps = Vec::with_capacity(params.steps);
    for _ in 0..params.steps {
        let points = front.points.len();
        let (mut next, blocked) = front.advanced(land, params.dt_min);
        next.resample(land, params.spacing_m);
        steps.push(StepStats {
            points,
            tasks: 1,
            blocked,
            area_m2: next.area(),
        });
        front = next;
    }
    Outcome {
        front,
        minutes: params.steps as f64 * params.dt_min,
        steps,
    }
}

/// The master: owns the fire line.
#[derive(Debug)]
pub struct FireMaster {
    land: Arc<Landscape>,
    params: SimParams,
    front: Front,
    /// This step's results, by task.
    results: Vec<Option<Advanced>>,
    step: usize,
    stats: Vec<StepStats>,
    out: Option<PathBuf>,
    report: Option<Sender<Outcome>>,
}

impl FireMaster {
    /// A master for `land`, starting from the ignition circle.
    pub fn new(land: Arc<Landscape>, params: SimParams) -> FireMaster {
        let front = ignition_front(&land, &params);
        FireMaster {
            land,
            params,
            front,
            results: Vec::new(),
            step: 0,
            stats: Vec::new(),
            out: None,
            report: None,
        }
    }

    /// Writes `PREFIX.csv` and `PREFIX.svg` when the run ends.
    #[must_use]
    pub fn write_to(mut self, prefix: Option<PathBuf>) -> FireMaster {
        self.out = prefix;
        self
    }

    /// Sends the [`Outcome`] to `report` when the run ends.
    #[must_use]
    pub fn report_to(mut self, report: Sender<Outcome>) -> FireMaster {
        self.report = Some(report);
        self
    }

    /// Cuts the fire line into tasks of `segment_points` points, each with its neighbours.
    fn segments(&self) -> Vec<Segment> {
        let pts = &self.front.points;
        let n = pts.len();
        let size = self.params.segment_points.max(1);
        (0..n)
            .step_by(size)
            .map(|first| {
                let end = (first + size).min(n);
                Segment {
                    first: first as u64,
                    before: pts[(first + n - 1) % n],
                    points: pts[first..end].to_vec(),
                    after: pts[end % n],
                }
            })
            .collect()
    }
}

impl Master for FireMaster {
    type Task = Segment;
    type Result = Advanced;
    type Shared = Step;

    /// One iteration per step: lets the progress line show i/N and an ETA.
    fn initialize(&mut self, setup: &mut mw::Setup) -> mw::Result<()> {
        setup.expect_iterations(self.params.steps);
        Ok(())
    }

    fn partition(&mut self, _iteration: &Iteration) -> Work<Step, Segment> {
        let step = Step {
            index: self.step as u64,
            dt_min: self.params.dt_min,
        };
        if self.step >= self.params.steps || self.front.points.len() < 3 {
            return Work::new(step, Vec::new());
        }
        let tasks = self.segments();
        self.results = vec![None; tasks.len()];
        Work::new(step, tasks)
    }

    fn recover(&mut self, task: TaskId, result: Advanced) {
        if let Some(slot) = self.results.get_mut(task.index()) {
            *slot = Some(result);
        }
    }

    fn end_iteration(&mut self, _iteration: &Iteration) -> Flow {
        let before = self.front.points.len();
        let tasks = self.results.len();
        let mut points: Vec<Point> = Vec::with_capacity(before);
        let mut blocked = 0;
        // Stitch in task order; the runtime delivers every result exactly once.
        for advanced in self.results.drain(..).flatten() {
            debug_assert_eq!(advanced.first as usize, points.len());
            points.extend_from_slice(&advanced.points);
            blocked += advanced.blocked;
        }
        let mut front = Front { points };
        front.resample(&self.land, self.params.spacing_m);
        self.stats.push(StepStats {
            points: before,
            tasks,
            blocked,
            area_m2: front.area(),
        });
        self.front = front;
        self.step += 1;
        if self.step >= self.params.steps || self.front.points.len() > MAX_POINTS {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    fn final_work(&mut self) -> mw::Result<()> {
        if self.front.points.len() > MAX_POINTS {
            return Err(mw::Error::app(format!(
                "the fire line grew past {MAX_POINTS} points at step {}; use a larger \
                 `--spacing-m` or a smaller `--dt-min`",
                self.step
            )));
        }
        let outcome = Outcome {
            front: self.front.clone(),
            steps: self.stats.clone(),
            minutes: self.step as f64 * self.params.dt_min,
        };
        if let Some(prefix) = &self.out {
            output::write(prefix, &self.land, &outcome).map_err(mw::Error::app)?;
        }
        if let Some(report) = &self.report {
            // The receiver may be gone (nobody asked for the outcome): nothing to do then.
            let _ = report.send(outcome);
        }
        Ok(())
    }
}

/// A worker: advances the segments it is given over its copy of the landscape.
#[derive(Debug, Clone)]
pub struct FireWorker {
    land: Arc<Landscape>,
}

impl FireWorker {
    /// A worker over `land`.
    pub fn new(land: Arc<Landscape>) -> FireWorker {
        FireWorker { land }
    }
}

impl Worker for FireWorker {
    type Task = Segment;
    type Result = Advanced;
    type Shared = Step;

    fn do_work(&mut self, step: &Step, segment: &Segment) -> Advanced {
        let (points, blocked) = advance_run(
            &self.land,
            segment.before,
            &segment.points,
            segment.after,
            step.dt_min,
        );
        Advanced {
            first: segment.first,
            points,
            blocked,
        }
    }
}
