//! Tables whose columns fit the terminal whole: each column as wide as
//! its widest cell, two blanks apart, and the least needed left out (and
//! named) when the terminal is too narrow, rather than every column cut.
//! The agent's peer table and the server's client table use it.

use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

/// Blank cells between two columns, so two never read as one.
pub const GAP: u16 = 2;

/// One column: its header, its cells, and how it gives way.
#[derive(Debug, Clone)]
pub struct Column {
    pub header: &'static str,
    pub cells: Vec<Span<'static>>,
    /// When it is left out of a narrow terminal: 0 never, higher sooner.
    pub drop_rank: u8,
    /// The widest its figures get, so columns do not shift as they change.
    pub min_width: u16,
    /// Spare width it takes, up to this many cells more (its cells are
    /// then not measured: it draws to the width it gets).
    pub grow: u16,
}

impl Column {
    /// A column as wide as its widest cell.
    pub fn new(header: &'static str, cells: Vec<Span<'static>>) -> Self {
        Self {
            header,
            cells,
            drop_rank: 0,
            min_width: 0,
            grow: 0,
        }
    }

    pub fn drop_rank(self, drop_rank: u8) -> Self {
        Self { drop_rank, ..self }
    }

    pub fn min_width(self, min_width: u16) -> Self {
        Self { min_width, ..self }
    }

    pub fn grow(self, grow: u16) -> Self {
        Self { grow, ..self }
    }

    fn natural_width(&self) -> u16 {
        let header = self.header.chars().count() as u16;
        let cells = if self.grow > 0 {
            0
        } else {
            self.cells.iter().map(Span::width).max().unwrap_or(0) as u16
        };
        header.max(cells).max(self.min_width)
    }
}

/// The columns that fit, their widths, and the headers left out.
#[derive(Debug)]
pub struct Fitted {
    pub columns: Vec<Column>,
    pub widths: Vec<u16>,
    pub hidden: Vec<&'static str>,
}

impl Fitted {
    /// The width given to the column headed `header`, if shown.
    pub fn width_of(&self, header: &str) -> Option<u16> {
        let i = self.columns.iter().position(|c| c.header == header)?;
        Some(self.widths[i])
    }

    /// The table: a header row in `header_style`, one row per cell index.
    pub fn table(&self, header_style: ratatui::style::Style) -> Table<'static> {
        let header =
            Row::new(self.columns.iter().map(|c| Cell::from(c.header))).style(header_style);
        let len = self
            .columns
            .iter()
            .map(|c| c.cells.len())
            .max()
            .unwrap_or(0);
        let rows: Vec<Row> = (0..len)
            .map(|i| {
                Row::new(
                    self.columns
                        .iter()
                        .map(|c| Cell::from(c.cells.get(i).cloned().unwrap_or_default())),
                )
            })
            .collect();
        let widths: Vec<_> = self
            .widths
            .iter()
            .map(|w| ratatui::layout::Constraint::Length(*w))
            .collect();
        Table::new(rows, widths).header(header).column_spacing(GAP)
    }
}

/// Fits `columns` into `width`: while they do not fit whole, the one most
/// readily dropped goes; what is left over widens the growing ones.
pub fn fit(columns: Vec<Column>, width: u16) -> Fitted {
    let mut shown = columns;
    let mut hidden = Vec::new();
    loop {
        let widths: Vec<u16> = shown.iter().map(Column::natural_width).collect();
        let gaps = GAP * (shown.len() as u16).saturating_sub(1);
        let total = widths.iter().sum::<u16>() + gaps;
        let droppable = (0..shown.len())
            .filter(|&i| shown[i].drop_rank > 0)
            .max_by_key(|&i| shown[i].drop_rank);
        match droppable {
            Some(i) if total > width => hidden.push(shown.remove(i).header),
            _ => {
                let widths = grow(&shown, widths, width.saturating_sub(total));
                return Fitted {
                    columns: shown,
                    widths,
                    hidden,
                };
            }
        }
    }
}

/// Hands `spare` cells to the growing columns, in order.
fn grow(columns: &[Column], mut widths: Vec<u16>, mut spare: u16) -> Vec<u16> {
    for (c, w) in columns.iter().zip(widths.iter_mut()) {
        let more = c.grow.min(spare);
        *w += more;
        spare -= more;
    }
    widths
}

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Past medians as block characters scaled to their own range; a window
/// without replies is a gap.
pub fn sparkline(history: &[Option<u64>], width: usize) -> String {
    let shown = &history[history.len().saturating_sub(width)..];
    let (lo, hi) = shown
        .iter()
        .flatten()
        .fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    shown
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(v) if hi == lo => BLOCKS[3],
            Some(v) => BLOCKS[((v - lo) * 7 / (hi - lo)) as usize],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(header: &'static str, cell: &'static str) -> Column {
        Column::new(header, vec![Span::raw(cell)])
    }

    #[test]
    fn columns_take_their_widest_cell_and_the_least_needed_go_first() {
        let cols = || {
            vec![
                col("name", "alpha"),
                col("b", "1234").drop_rank(2),
                col("c", "123").drop_rank(1),
                col("hist", "").min_width(4).grow(6),
            ]
        };
        let f = fit(cols(), 100);
        assert_eq!(f.widths, [5, 4, 3, 10]);
        assert!(f.hidden.is_empty());
        // 5 + 3 + 4 and two gaps: "b" (rank 2) went first.
        let f = fit(cols(), 16);
        assert_eq!(f.hidden, ["b"]);
        assert_eq!(f.widths, [5, 3, 4]);
        let f = fit(cols(), 10);
        assert_eq!(f.hidden, ["b", "c"]);
        assert_eq!(f.width_of("hist"), Some(4));
    }

    #[test]
    fn sparklines_scale_to_their_range_and_leave_gaps() {
        assert_eq!(sparkline(&[Some(10), Some(20), None, Some(17)], 24), "▁█ ▅");
        assert_eq!(sparkline(&[Some(5), Some(5)], 24), "▄▄");
        assert_eq!(sparkline(&[Some(1), Some(2), Some(3)], 2), "▁█");
        assert_eq!(sparkline(&[], 24), "");
    }
}
