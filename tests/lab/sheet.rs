//! The lab's result sheet: every check as a row of what netem was told (or
//! what follows from it), what the kernel counted and what Synapse
//! reported, side by side. Written as Markdown for `docs/lab.md`; a
//! failed row fails the test, after every row of the group is checked.

use super::outputs::Scenario;
use std::fmt::Write as _;
use std::path::Path;

pub struct Sheet {
    group: String,
    text: String,
    failures: Vec<String>,
    scenario: String,
    /// Rows so far, statistical ones among them.
    pub rows: usize,
    pub statistical: usize,
}

impl Sheet {
    pub fn new(group: &str) -> Self {
        Self {
            group: group.to_string(),
            text: String::new(),
            failures: Vec::new(),
            scenario: String::new(),
            rows: 0,
            statistical: 0,
        }
    }

    /// Starts a scenario's table: its name, what it did, how long it took.
    /// A scenario whose script failed fails here, with its log.
    pub fn scenario(&mut self, s: &Scenario, what: &str) {
        self.scenario = s.name.clone();
        let _ = write!(
            self.text,
            "\n### `{}` ({:.0} s)\n\n{what}\n\n| figure | told, or what follows from it | the kernel (or the reflector) counted | Synapse reported | check |\n|---|---|---|---|---|\n",
            s.name,
            s.seconds()
        );
        if s.rc() != Some(0) {
            self.fail(
                "scenario script",
                format!("exited {:?}:\n{}", s.rc(), s.log_tail()),
            );
        }
    }

    fn fail(&mut self, figure: &str, why: String) {
        self.failures.push(format!(
            "{} / {}: {figure}: {why}",
            self.group, self.scenario
        ));
    }

    /// One row. `ok` decides; `how` says what was checked.
    pub fn row(
        &mut self,
        figure: &str,
        told: &str,
        kernel: &str,
        synapse: &str,
        how: &str,
        ok: bool,
    ) {
        self.rows += 1;
        let mark = if ok { "✓" } else { "✗" };
        let _ = writeln!(
            self.text,
            "| {figure} | {told} | {kernel} | {synapse} | {mark} {how} |"
        );
        if !ok {
            self.fail(
                figure,
                format!("told {told}; kernel {kernel}; Synapse {synapse} ({how})"),
            );
        }
    }

    /// Synapse's count must equal the truth exactly.
    pub fn exact(&mut self, figure: &str, kernel: i64, synapse: i64, how: &str) {
        self.row(
            figure,
            "",
            &kernel.to_string(),
            &synapse.to_string(),
            &format!("equal ({how})"),
            kernel == synapse,
        );
    }

    /// Synapse's count must equal what the scenario set up (no kernel
    /// counter involved).
    pub fn expect(&mut self, figure: &str, told: i64, synapse: i64) {
        self.row(
            figure,
            &told.to_string(),
            "",
            &synapse.to_string(),
            "equal",
            told == synapse,
        );
    }

    /// A statistical check: Synapse's value must fall in `[lo, hi]`, a
    /// confidence interval.
    pub fn within(&mut self, figure: &str, told: &str, kernel: &str, value: Interval) {
        self.statistical += 1;
        self.bounded(figure, told, kernel, value);
    }

    /// A bound that follows from what was done (not from chance): the
    /// value must fall in `[lo, hi]`.
    pub fn bounded(&mut self, figure: &str, told: &str, kernel: &str, value: Interval) {
        let ok = value.lo <= value.got_hi && value.got_lo <= value.hi;
        self.row(
            figure,
            &format!("{told} [{}, {}]", value.fmt(value.lo), value.fmt(value.hi)),
            kernel,
            &value.fmt(value.got_hi),
            &value.how,
            ok,
        );
    }

    /// Writes the group's table under `dir` and fails with every failed row.
    pub fn finish(self, dir: &Path, header: &str) {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{}.md", self.group));
        std::fs::write(&path, format!("{header}\n{}", self.text)).unwrap();
        println!("lab: results of {} in {}", self.group, path.display());
        assert!(
            self.failures.is_empty(),
            "{} of {} checks failed:\n{}",
            self.failures.len(),
            self.rows,
            self.failures.join("\n")
        );
    }
}

/// A value Synapse reported (which may stand for a range, e.g. a
/// histogram bucket) against the interval it must overlap.
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    pub got_lo: f64,
    pub got_hi: f64,
    pub unit: Unit,
    pub how: String,
}

#[derive(Clone, Copy)]
pub enum Unit {
    /// Nanoseconds, shown as milliseconds.
    Ns,
    /// A count.
    Count,
    /// A fraction, shown as a percentage.
    Ratio,
    /// A plain number.
    Number,
}

impl Interval {
    fn fmt(&self, v: f64) -> String {
        match self.unit {
            Unit::Ns => format!("{:.2} ms", v / 1e6),
            Unit::Count => format!("{v:.0}"),
            Unit::Ratio => format!("{:.2} %", v * 100.0),
            Unit::Number => format!("{v:.2}"),
        }
    }
}

/// Nanoseconds as milliseconds, for the sheet.
pub fn ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}
