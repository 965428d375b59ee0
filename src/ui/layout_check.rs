//! Test helpers: a rendered table's columns stand apart and are whole.
//!
//! Two columns one space apart read as one ("|IPDV| p99 send / net"), and
//! a cell cut at its column's edge ("127.0") says something false. These
//! checks read the rendered line and fail on either.

use ratatui::buffer::Buffer;

/// The columns of a table row need this many blank cells between them.
pub const MIN_GAP: usize = 2;

/// Every row of `buf` as text, trailing blanks removed.
pub fn lines(buf: &Buffer) -> Vec<String> {
    let a = buf.area;
    (a.top()..a.bottom())
        .map(|y| {
            let line: String = (a.left()..a.right())
                .map(|x| buf[(x, y)].symbol())
                .collect();
            line.trim_end().to_string()
        })
        .collect()
}

/// Checks that `cells` appear whole in `line`, in order, each at least
/// [`MIN_GAP`] blanks after the one before.
pub fn columns_apart(line: &str, cells: &[&str]) -> Result<(), String> {
    let chars: Vec<char> = line.chars().collect();
    let mut at = 0;
    let mut prev_end: Option<usize> = None;
    for cell in cells.iter().filter(|c| !c.is_empty()) {
        let want: Vec<char> = cell.chars().collect();
        let start = (at..=chars.len().saturating_sub(want.len()))
            .find(|&i| chars[i..].starts_with(&want))
            .ok_or_else(|| format!("{cell:?} is not whole in {line:?}"))?;
        if let Some(end) = prev_end {
            let gap = start - end;
            if gap < MIN_GAP || chars[end..start].iter().any(|c| *c != ' ') {
                return Err(format!(
                    "{cell:?} is {gap} cell(s) from the column before in {line:?}"
                ));
            }
        }
        at = start + want.len();
        prev_end = Some(at);
    }
    Ok(())
}

#[test]
fn columns_that_touch_or_are_cut_are_found() {
    assert!(columns_apart("a  bb  ccc", &["a", "bb", "ccc"]).is_ok());
    assert!(columns_apart("a bb  ccc", &["a", "bb", "ccc"]).is_err());
    assert!(columns_apart("|IPDV| p99 send / net", &["|IPDV| p99", "send / net"]).is_err());
    assert!(columns_apart("peer  127.0", &["peer", "127.0.0.1"]).is_err());
    assert!(
        columns_apart("x  y", &["x", "", "y"]).is_ok(),
        "an empty cell is skipped"
    );
}
