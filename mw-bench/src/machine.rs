//! What the document says about the machine and the date, from the system itself (no extra
//! crates: `/proc/cpuinfo`, `uname`, `rustc --version`, and the civil date from the Unix clock).

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The computer the numbers came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub os: String,
    pub rustc: String,
}

impl Machine {
    /// Reads what it can; unknown parts say `unknown`.
    pub fn detect() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| cpu_model(&text))
            .unwrap_or_else(|| "unknown CPU".to_owned());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            os: output("uname", &["-srm"]).unwrap_or_else(|| std::env::consts::OS.to_owned()),
            rustc: output(
                &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()),
                &["--version"],
            )
            .unwrap_or_else(|| "unknown".to_owned()),
        }
    }

    /// `CPU, N cores`.
    pub fn describe(&self) -> String {
        format!("{}, {} cores", self.cpu, self.cores)
    }
}

/// The first `model name` of `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, name)| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Now, as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(seconds)
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC` (proleptic Gregorian calendar,
/// Howard Hinnant's `civil_from_days`).
pub fn utc(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        of_day % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34, a leap day in a century leap year.
        assert_eq!(utc(951_827_640), "2000-02-29 12:34 UTC");
        assert_eq!(utc(1_767_225_599), "2025-12-31 23:59 UTC");
    }

    #[test]
    fn the_cpu_model_is_read_from_cpuinfo() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: x\n";
        assert_eq!(cpu_model(text).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }
}

/// The highest 1-minute load average seen while the suite ran, sampled every few seconds, so
/// that the document can say whether other programs competed with the runs.
#[derive(Debug)]
pub struct LoadWatch {
    peak: std::sync::Arc<std::sync::Mutex<Option<f64>>>,
    stop: std::sync::mpsc::Sender<()>,
}

impl LoadWatch {
    /// Starts sampling `/proc/loadavg` (nothing is recorded where it does not exist).
    pub fn start() -> LoadWatch {
        let peak = std::sync::Arc::new(std::sync::Mutex::new(None));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let seen = std::sync::Arc::clone(&peak);
        std::thread::spawn(move || {
            loop {
                if let Some(load) = load_average() {
                    let mut peak = seen.lock().unwrap_or_else(|e| e.into_inner());
                    *peak = Some(peak.map_or(load, |p: f64| p.max(load)));
                }
                match stopped.recv_timeout(std::time::Duration::from_secs(5)) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        });
        LoadWatch { peak, stop }
    }

    /// The peak so far, and stops sampling.
    pub fn finish(self) -> Option<f64> {
        let _ = self.stop.send(());
        let peak = *self.peak.lock().unwrap_or_else(|e| e.into_inner());
        match (peak, load_average()) {
            (Some(p), Some(now)) => Some(p.max(now)),
            (p, now) => p.or(now),
        }
    }
}

/// How busy the machine was while runs went on: the peak of its 1-minute load average
/// against its cores, the one judgement every note on the load makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// The peak within the cores: nothing but the runs themselves wanted them.
    Quiet(f64),
    /// The peak above the cores: the runs' own ranks (which poll for messages) or other
    /// programs competed for them at times.
    Contended(f64),
    /// No load average to read.
    Unread,
}

impl Load {
    pub fn of(cores: usize, peak: Option<f64>) -> Load {
        match peak {
            Some(peak) if peak <= cores as f64 => Load::Quiet(peak),
            Some(peak) => Load::Contended(peak),
            None => Load::Unread,
        }
    }
}

/// The 1-minute load average, from `/proc/loadavg`.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}
