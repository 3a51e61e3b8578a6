//! `--checkpoint` and `--resume`: what a run needs to go on after its master stopped, saved at
//! every iteration boundary. The file holds the master's own state (its
//! [`checkpoint`](crate::Master::checkpoint) hook), the iteration to go on from, the tunables
//! in force and the task times measured last, in the runtime's binary codec. It is written
//! as every output is ([`write_output`](crate::write_output)), so a kill during a write leaves
//! the previous one.

use std::path::Path;

use crate::codec;
use crate::error::{Error, Result};
use crate::input::{InputKind, read_input};
use crate::measure::{Moments, TaskStats};
use crate::policy::PolicyChoice;
use crate::tunables::Tunables;

/// Opens every checkpoint file; a file without it is not one.
const MAGIC: u64 = u64::from_le_bytes(*b"mwgen-ck");
/// Changes when the layout does: a file of another version is refused, not misread.
const VERSION: u32 = 1;

/// A run's state at an iteration boundary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checkpoint {
    /// The program that wrote it (its binary's name).
    pub app: String,
    /// The iteration to go on from.
    pub next_iteration: usize,
    pub tunables: Tunables,
    /// The task times of the last iteration, pooled and per worker, for the policies and the
    /// tuner's first decisions after the restart.
    pub task_times: (Moments, Vec<Moments>),
    /// Of a checkpoint taken inside iteration `next_iteration` (a one-bag job): the ids of its
    /// tasks recovered already, as ranges `start..end`; empty at an iteration boundary.
    pub settled: Vec<(u64, u64)>,
    /// What the master's `checkpoint` hook returned.
    pub master: Vec<u8>,
}

type Sums = (u64, f64, f64);

fn sums(m: &Moments) -> Sums {
    (m.count(), m.sum(), m.sum_sq())
}

fn moments((count, sum, sum_sq): Sums) -> Moments {
    Moments::from_sums(count, sum, sum_sq)
}

/// Writes checkpoints on a thread of its own, one at a time, so that the iteration after a
/// boundary does not wait for the file system: saving N-Body's 2,000 bodies took 2.5 % of an
/// iteration when written in line.
#[derive(Debug, Default)]
pub(crate) struct Saver {
    writing: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Saver {
    /// Starts writing `checkpoint` at `path`, once the previous one is written.
    ///
    /// # Errors
    /// The previous write failed.
    pub(crate) fn save(&mut self, checkpoint: Checkpoint, path: &Path) -> Result<()> {
        self.finish()?;
        let path = path.to_owned();
        self.writing = Some(std::thread::spawn(move || checkpoint.write(&path)));
        Ok(())
    }

    /// Waits for the last write.
    ///
    /// # Errors
    /// It failed.
    pub(crate) fn finish(&mut self) -> Result<()> {
        match self.writing.take().map(std::thread::JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(Error::backend("the checkpoint writer panicked")),
        }
    }
}

impl Checkpoint {
    /// Writes the checkpoint at `path`, atomically.
    pub(crate) fn write(&self, path: &Path) -> Result<()> {
        let (pooled, per_worker) = &self.task_times;
        let body = (
            (MAGIC, VERSION, self.app.clone(), self.next_iteration as u64),
            (
                self.tunables.nworkers as u64,
                self.tunables.factor,
                self.tunables.policy.to_string(),
            ),
            (
                sums(pooled),
                per_worker.iter().map(sums).collect::<Vec<_>>(),
            ),
            self.settled.clone(),
            self.master.clone(),
        );
        let bytes = codec::encode(&body);
        crate::write_output(path, |out| out.write_all(&bytes))
    }

    /// Reads the checkpoint at `path`, written by `app`.
    ///
    /// # Errors
    /// A file that cannot be read, is not a checkpoint, is of another version or of another
    /// program, or is damaged: each said plainly, with what to do.
    pub(crate) fn read(path: &Path, app: &str) -> Result<Checkpoint> {
        let shown = path.display();
        let bytes = read_input(path, InputKind::Checkpoint).map_err(|e| {
            Error::config(
                format!("error: cannot read the checkpoint `{shown}`: {e}"),
                "give the file a run wrote with `--checkpoint`",
            )
        })?;
        let damaged = |why: String| {
            Error::config(
                format!("error: `{shown}` is not a checkpoint this runtime can resume: {why}"),
                "resume from a file written by `--checkpoint` with this version of the program, \
                 or start afresh without `--resume`",
            )
        };
        let magic = bytes.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok());
        if magic.map(u64::from_le_bytes) != Some(MAGIC) {
            return Err(damaged("it does not start as one".into()));
        }
        type Body = (
            (u64, u32, String, u64),
            (u64, f64, String),
            (Sums, Vec<Sums>),
            Vec<(u64, u64)>,
            Vec<u8>,
        );
        let version = bytes
            .get(8..12)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes);
        if version != Some(VERSION) {
            return Err(damaged(format!(
                "it is of format version {}, this runtime reads {VERSION}",
                version.map_or("?".into(), |v| v.to_string())
            )));
        }
        let (
            (_, _, saved_app, next),
            (nworkers, factor, policy),
            (pooled, workers),
            settled,
            master,
        ): Body = codec::decode(&bytes).map_err(|e| damaged(format!("it is damaged ({e})")))?;
        if saved_app != app {
            return Err(Error::config(
                format!(
                    "error: the checkpoint `{shown}` was written by `{saved_app}`, not `{app}`"
                ),
                "resume with the program that wrote it",
            ));
        }
        let policy: PolicyChoice = policy
            .parse()
            .map_err(|_| damaged(format!("it names an unknown policy `{policy}`")))?;
        Ok(Checkpoint {
            app: saved_app,
            next_iteration: usize::try_from(next).map_err(|_| damaged("its iteration".into()))?,
            tunables: Tunables {
                nworkers: usize::try_from(nworkers).unwrap_or(usize::MAX).max(1),
                factor,
                policy,
            },
            task_times: (moments(pooled), workers.into_iter().map(moments).collect()),
            settled,
            master,
        })
    }
}

impl TaskStats {
    /// The task times of the last iteration, as a checkpoint keeps them.
    pub(crate) fn last(&self) -> (Moments, Vec<Moments>) {
        let workers = (0..self.workers()).map(|w| self.worker(w)).collect();
        (self.pooled(), workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            app: "nbody".into(),
            next_iteration: 7,
            tunables: Tunables {
                nworkers: 3,
                factor: 0.25,
                policy: crate::PolicyName::Daf.into(),
            },
            task_times: (
                Moments::from_sums(4, 8.0, 20.0),
                vec![Moments::from_sums(2, 4.0, 10.0); 2],
            ),
            settled: vec![(0, 4), (9, 12)],
            master: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_checkpoint_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ck");
        sample().write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path, "nbody").unwrap(), sample());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ck");
        sample().write(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        let cases: [(&str, Vec<u8>, &str); 4] = [
            (
                "other",
                b"hello world, not a checkpoint".to_vec(),
                "does not start as one",
            ),
            ("truncated", good[..good.len() - 2].to_vec(), "damaged"),
            (
                "version",
                [&good[..8], &[9, 0, 0, 0], &good[12..]].concat(),
                "version 9",
            ),
            ("program", good.clone(), "written by `nbody`, not `xfire`"),
        ];
        for (case, bytes, says) in cases {
            std::fs::write(&path, bytes).unwrap();
            let app = if case == "program" { "xfire" } else { "nbody" };
            let err = Checkpoint::read(&path, app).unwrap_err().to_string();
            assert!(err.contains(says), "{case}: {err}");
            assert!(err.contains("help:"), "{case}: {err}");
        }
        let missing = Checkpoint::read(&dir.path().join("none"), "nbody").unwrap_err();
        assert!(missing.to_string().contains("cannot read the checkpoint"));
    }
}
