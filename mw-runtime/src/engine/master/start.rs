//! Starting a run: the control endpoint, the workers' `Ready`, and the checkpoints, resumed
//! from and saved.

use std::path::Path;
use std::time::Duration;

use crate::app::{Master, Setup};
use crate::clock;
use crate::error::{Error, ErrorKind, Result};
use crate::policy::PolicyChoice;
use crate::transport::{FromWorker, MasterLink};
use crate::tuning::control::ControlServer;

use super::{Engine, RUNTIME, entering};
use crate::engine::checkpoint::{Checkpoint, Shape};

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// Opens the control endpoint, if one was asked for.
    pub(super) fn open_control(&mut self) -> Result<()> {
        if let Some(addr) = &self.config.control {
            let server = ControlServer::start(addr, self.tunables.clone())?;
            eprintln!("mw: control endpoint listening on {}", server.addr());
            self.control = Some(server);
        }
        Ok(())
    }

    /// Waits until every worker has run `initialize`; failed ones take no part.
    pub(super) fn await_ready(&mut self) -> Result<()> {
        let pool = self.link.pool();
        let mut setup = Setup {
            pool,
            backend: self.link.backend(),
            protocol: self.config.protocol,
            tunables: self.tunables.clone(),
            iterations: None,
            tasks: None,
            stream_ahead: self.stream_ahead,
            policy: None,
            registry: Default::default(),
            tunlets: Vec::new(),
            arguments: Vec::new(),
        };
        entering("initialize");
        let master_init = self.master.initialize(&mut setup);
        entering(RUNTIME);
        if let Some(own) = setup.policy.take() {
            self.policy = own;
            self.own_policy = true;
        }
        self.registry = std::mem::take(&mut setup.registry);
        self.tuner.register_policies(&self.registry);
        self.tunables
            .register_policies(self.registry.entries().iter().map(|(name, _)| name.clone()));
        self.tuner.add_tunlets(std::mem::take(&mut setup.tunlets));
        self.progress.expect_iterations(setup.iterations);
        self.progress.expect_tasks(setup.tasks);
        self.shape = Shape {
            arguments: std::mem::take(&mut setup.arguments),
            iterations: setup.iterations,
        };
        self.stream_ahead = setup.stream_ahead;
        let mut errors = Vec::new();
        for _ in 0..pool {
            match self.link.recv()? {
                (_, FromWorker::Ready { error: None }) => {}
                (worker, FromWorker::Ready { error: Some(e) }) => {
                    eprintln!(
                        "warning: worker {worker} failed to initialize and takes no part: {e}"
                    );
                    self.healthy[worker] = false;
                    errors.push(format!("worker {worker}: {e}"));
                }
                (worker, _) => {
                    return Err(Error::backend(format!(
                        "worker {worker} answered before it was ready"
                    )));
                }
            }
        }
        master_init?;
        // A registered name is looked up once the program has registered its policies (every
        // worker has answered, so none is left waiting); `Setup::policy` takes precedence. It
        // is the starting value of `policy`, which can be changed like any other.
        if let PolicyChoice::Registered(name) = &self.config.policy {
            let registered = self.registry.build(name)?;
            if !self.own_policy {
                self.policy = registered;
                let name = self.registry.registered_name(name).unwrap_or(name);
                self.policy_name = PolicyChoice::Registered(name.to_owned());
                self.tunables.start_with_policy(self.policy_name.clone());
            }
        }
        if !self.healthy.contains(&true) {
            let message = if errors.is_empty() {
                "the pool is empty".to_owned()
            } else {
                errors.join("; ")
            };
            return Err(ErrorKind::NoWorkers { message }.into());
        }
        Ok(())
    }

    /// Puts back the master's state saved in `resumed`, if the run goes on from a checkpoint;
    /// with `--checkpoint`, checks the master can save one before any work.
    pub(super) fn restore(&mut self, resumed: Option<Checkpoint>) -> Result<()> {
        if let Some(saved) = resumed {
            let path = self.config.resume.as_deref().unwrap_or(Path::new(""));
            saved.fits(&self.shape, path)?;
            entering("restore");
            let restored = self.master.restore(&saved.master);
            entering(RUNTIME);
            restored?;
            eprintln!(
                "mw: resumed from `{}` at iteration {}",
                self.config
                    .resume
                    .as_deref()
                    .unwrap_or(Path::new(""))
                    .display(),
                saved.next_iteration
            );
        }
        if let Some(path) = &self.config.checkpoint {
            entering("checkpoint");
            let can = self.master.checkpoint().is_some();
            entering(RUNTIME);
            if !can {
                return Err(Error::config(
                    format!(
                        "error: `--checkpoint {}`: this program's master has no `checkpoint` hook",
                        path.display()
                    ),
                    "give the master `checkpoint` and `restore` hooks (its state between two \
                     iterations), or run without `--checkpoint`",
                ));
            }
        }
        Ok(())
    }

    /// Saves the state to go on from at iteration `next` (`--checkpoint`), of which the tasks
    /// `settled` (ranges of task ids) were recovered already; the time it took.
    pub(super) fn save(
        &mut self,
        next: usize,
        settled: Vec<(u64, u64)>,
    ) -> Result<Option<Duration>> {
        let Some(path) = &self.config.checkpoint else {
            return Ok(None);
        };
        let saving = clock::now();
        entering("checkpoint");
        let master = self.master.checkpoint();
        entering(RUNTIME);
        let Some(master) = master else {
            return Err(Error::app(
                "the master's `checkpoint` hook returned None after it had returned a state",
            ));
        };
        let checkpoint = Checkpoint {
            app: self.metrics.app.clone(),
            next_iteration: next,
            tunables: self.tunables.current(),
            task_times: self.stats.last(),
            settled,
            master,
            arguments: self.shape.arguments.clone(),
        };
        self.saver.save(checkpoint, path)?;
        Ok(Some(clock::since(saving)))
    }
}
