//! One self-rewriting progress line on stderr, only when stderr is a
//! terminal (so logs and pipes stay clean).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};
use synapse_units::{format_rate, group_thousands};

/// Progress of a headless run.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    started: Instant,
    total: Option<u64>,
    time_budget: Option<Duration>,
    drawn: bool,
}

impl Progress {
    /// Progress towards `total` packets or `time_budget`; silent unless
    /// stderr is a terminal.
    pub fn new(total: Option<u64>, time_budget: Option<Duration>) -> Self {
        Self {
            enabled: std::io::stderr().is_terminal(),
            started: Instant::now(),
            total,
            time_budget,
            drawn: false,
        }
    }

    /// The line for `done` packets, `elapsed` into the run.
    pub fn line(&self, done: u64, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let fraction = match (self.total, self.time_budget) {
            (Some(t), _) if t > 0 => Some(done as f64 / t as f64),
            (_, Some(b)) if !b.is_zero() => Some(secs / b.as_secs_f64()),
            _ => None,
        };
        let count = match self.total {
            Some(t) => format!("{}/{}", group_thousands(done), group_thousands(t)),
            None => group_thousands(done),
        };
        let bar = fraction.map_or_else(String::new, |f| {
            let filled = ((f.clamp(0.0, 1.0)) * 30.0).round() as usize;
            format!("{}{} ", "█".repeat(filled), "░".repeat(30 - filled))
        });
        format!(
            "{bar}{count} packets  {} pkt/s  [{:.1}s]",
            format_rate(rate),
            secs
        )
    }

    /// Redraws the line.
    pub fn update(&mut self, done: u64) {
        if self.enabled {
            let line = self.line(done, self.started.elapsed());
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{line}");
            let _ = err.flush();
            self.drawn = true;
        }
    }

    /// Shows `line` instead (a load run's phase).
    pub fn show(&mut self, line: &str) {
        if self.enabled {
            let secs = self.started.elapsed().as_secs_f64();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{line}  [{secs:.1}s]");
            let _ = err.flush();
            self.drawn = true;
        }
    }

    /// Erases the line, leaving the terminal as it was.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_count_rate_and_bar() {
        let p = Progress::new(Some(10_000), None);
        let line = p.line(5_000, Duration::from_secs(1));
        assert!(line.contains("5,000/10,000 packets"), "{line}");
        assert!(line.contains("5.0k pkt/s"), "{line}");
        assert_eq!(line.matches('█').count(), 15);
    }

    #[test]
    fn duration_runs_fill_by_time() {
        let p = Progress::new(None, Some(Duration::from_secs(4)));
        let line = p.line(100, Duration::from_secs(1));
        assert!(line.starts_with(&"█".repeat(8)), "{line}");
        assert!(line.contains("100 packets"));
    }
}
