//! A per-packet log (`--log`, client or server) read back by column name,
//! for tests that check a run against its own records.

use std::path::Path;

/// A CSV log: its header and rows, fields as written.
pub struct CsvLog {
    header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl CsvLog {
    /// Reads `path`, which must hold a header and whole rows.
    pub fn read(path: &Path) -> Self {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .expect("a header")
            .split(',')
            .map(str::to_string)
            .collect();
        let rows = lines
            .map(|l| {
                let f: Vec<String> = l.split(',').map(str::to_string).collect();
                assert_eq!(f.len(), header.len(), "a whole row: {l}");
                f
            })
            .collect();
        Self { header, rows }
    }

    /// Column `name`'s index.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    }

    /// Row `row`'s `name` field, as written.
    pub fn text<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        &row[self.col(name)]
    }

    /// Row `row`'s `name` field as nanoseconds: `seconds.nanoseconds` (a
    /// wall-clock point) or a whole number (a duration, a count); `None`
    /// when empty.
    pub fn ns(&self, row: &[String], name: &str) -> Option<u64> {
        let field = self.text(row, name);
        if field.is_empty() {
            return None;
        }
        Some(match field.split_once('.') {
            Some((s, n)) => s.parse::<u64>().unwrap() * 1_000_000_000 + n.parse::<u64>().unwrap(),
            None => field.parse().unwrap(),
        })
    }
}
