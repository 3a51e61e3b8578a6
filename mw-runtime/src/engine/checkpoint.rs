//! `--checkpoint` and `--resume`: what a run needs to go on after its master stopped, saved at
//! every iteration boundary. The file holds the master's own state (its
//! [`checkpoint`](crate::Master::checkpoint) hook), the iteration to go on from, the tunables
//! in force, the task times measured last, and the program's arguments its state comes from
//! ([`Setup::state_depends_on`](crate::Setup::state_depends_on)), in the runtime's binary codec,
//! closed by a CRC-32 of everything before it: a damaged file is refused, never resumed. It is
//! written as every output is ([`write_output`](crate::write_output)), so a kill during a
//! write leaves the previous one.

use std::path::Path;

use crate::codec;
use crate::error::{Error, Result};
use crate::input::{InputKind, read_input};
use crate::measure::{Moments, TaskStats};
use crate::policy::PolicyChoice;
use crate::tuning::tunables::Tunables;

/// Opens every checkpoint file; a file without it is not one.
const MAGIC: u64 = u64::from_le_bytes(*b"mwgen-ck");
/// Changes when the layout does: a file of another version is refused, not misread.
const VERSION: u32 = 2;
/// Bytes of the checksum at the end.
const CHECKSUM: usize = 4;

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
    /// The program's arguments the master's state comes from, by name.
    pub arguments: Vec<(String, String)>,
}

/// What a run says of itself that a checkpoint must fit: the arguments its state comes from
/// ([`Setup::state_depends_on`](crate::Setup::state_depends_on)) and the iterations it expects
/// ([`Setup::expect_iterations`](crate::Setup::expect_iterations)).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Shape {
    pub arguments: Vec<(String, String)>,
    pub iterations: Option<usize>,
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
            self.arguments.clone(),
        );
        let mut bytes = codec::encode(&body);
        let sum = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        crate::write_output(path, |out| out.write_all(&bytes))
    }

    /// Refuses to go on from this checkpoint (read from `path`) in a run of `shape`: one whose
    /// state would come from other arguments, or that would end before the iteration saved.
    ///
    /// # Errors
    /// The first argument that differs, or the iterations, with what to do.
    pub(crate) fn fits(&self, shape: &Shape, path: &Path) -> Result<()> {
        let shown = path.display();
        let afresh = "or start afresh without `--resume`";
        let said = |args: &[(String, String)], name: &str| {
            args.iter()
                .find(|(n, _)| n == name)
                .map(|(_, value)| value.clone())
        };
        let names = self
            .arguments
            .iter()
            .chain(&shape.arguments)
            .map(|(name, _)| name);
        for name in names {
            let (saved, now) = (said(&self.arguments, name), said(&shape.arguments, name));
            if saved == now {
                continue;
            }
            let value = |v: &Option<String>| match v {
                Some(v) => format!("`{name} {v}`"),
                None => format!("no `{name}`"),
            };
            return Err(Error::config(
                format!(
                    "error: the checkpoint `{shown}` was saved by a run with {}, and this run has \
                     {}: the state it holds comes from that argument",
                    value(&saved),
                    value(&now)
                ),
                match &saved {
                    Some(v) => format!("resume with `{name} {v}`, {afresh}"),
                    None => format!("resume with the arguments of the run that saved it, {afresh}"),
                },
            ));
        }
        if let Some(iterations) = shape.iterations.filter(|&n| n < self.next_iteration) {
            return Err(Error::config(
                format!(
                    "error: the checkpoint `{shown}` was saved after iteration {}, and this run \
                     has {iterations} iterations in all: it would end before it resumed",
                    self.next_iteration
                ),
                format!(
                    "ask for {} iterations (steps) or more, {afresh}",
                    self.next_iteration
                ),
            ));
        }
        Ok(())
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
            Vec<(String, String)>,
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
        let (content, sum) = bytes.split_at(bytes.len().saturating_sub(CHECKSUM).max(12));
        let sum = <[u8; CHECKSUM]>::try_from(sum).map(u32::from_le_bytes);
        if sum.ok() != Some(crc32fast::hash(content)) {
            return Err(damaged(
                "its checksum does not match its content: it was changed or damaged after it \
                 was written"
                    .into(),
            ));
        }
        let (
            (_, _, saved_app, next),
            (nworkers, factor, policy),
            (pooled, workers),
            settled,
            master,
            arguments,
        ): Body = codec::decode(content).map_err(|e| damaged(format!("it is damaged ({e})")))?;
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
            arguments,
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
            arguments: vec![
                ("--bodies".into(), "1000".into()),
                ("--seed".into(), "1".into()),
            ],
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
    fn a_flipped_byte_anywhere_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ck");
        sample().write(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        // Past the magic and the version, which have messages of their own.
        for at in 12..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            let err = Checkpoint::read(&path, "nbody").unwrap_err().to_string();
            assert!(
                err.contains(&format!("`{}`", path.display()))
                    && err.contains("checksum does not match"),
                "byte {at}: {err}"
            );
        }
    }

    #[test]
    fn a_run_of_other_arguments_or_fewer_iterations_does_not_resume() {
        let path = Path::new("run.ck");
        let saved = sample();
        let shape = |seed: &str, iterations| Shape {
            arguments: vec![
                ("--bodies".into(), "1000".into()),
                ("--seed".into(), seed.into()),
            ],
            iterations,
        };
        saved.fits(&shape("1", Some(10)), path).unwrap();
        saved.fits(&shape("1", Some(7)), path).unwrap();
        saved.fits(&shape("1", None), path).unwrap();
        let err = saved.fits(&shape("2", Some(10)), path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error: the checkpoint `run.ck` was saved by a run with `--seed 1`, and this run has \
             `--seed 2`: the state it holds comes from that argument\nhelp: resume with \
             `--seed 1`, or start afresh without `--resume`"
        );
        let err = saved.fits(&shape("1", Some(5)), path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error: the checkpoint `run.ck` was saved after iteration 7, and this run has 5 \
             iterations in all: it would end before it resumed\nhelp: ask for 7 iterations \
             (steps) or more, or start afresh without `--resume`"
        );
        let none = Shape::default();
        let err = saved.fits(&none, path).unwrap_err().to_string();
        assert!(err.contains("and this run has no `--bodies`"), "{err}");
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
            (
                "truncated",
                good[..good.len() - 2].to_vec(),
                "checksum does not match",
            ),
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
