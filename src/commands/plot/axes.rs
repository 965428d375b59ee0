//! Where an axis gets its labels, chosen against the room they take as
//! the embedded font measures them: labels never stack; where they would,
//! the less important ones are left out (a log axis keeps a label in
//! every decade it can: the powers of ten first, then one in a decade cut
//! by the axis's end, then the 5s and 2s).

/// Measures text: (width, height) in pixels at a font size.
pub type Measure<'a> = &'a dyn Fn(&str, u32) -> (u32, u32);

/// Room kept between two labels, pixels.
const GAP: f64 = 6.0;

/// Picks candidates in order of importance, each kept only if it keeps
/// its room from those kept: (position px, half its extent px).
fn thin(candidates: Vec<(f64, f64, f64)>) -> Vec<f64> {
    let mut kept: Vec<(f64, f64, f64)> = Vec::new();
    for c in candidates {
        let (pos, half, _) = c;
        if kept
            .iter()
            .any(|&(p, h, _)| (p - pos).abs() < h + half + GAP)
        {
            continue;
        }
        kept.push(c);
    }
    let mut values: Vec<f64> = kept.into_iter().map(|k| k.2).collect();
    values.sort_by(f64::total_cmp);
    values
}

/// Labels of a log axis from `lo` to `hi` (µs), `px` long, each label
/// `extent(v)` pixels along the axis: every decade gets one where it fits.
pub fn log_ticks(lo: f64, hi: f64, px: f64, extent: impl Fn(f64) -> f64) -> Vec<f64> {
    let (llo, lhi) = (lo.ln(), hi.ln());
    let in_range = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let decades: Vec<f64> = (first..=last).map(|k| 10f64.powi(k)).collect();
    let candidate = |v: f64| {
        let pos = (v.ln() - llo) / (lhi - llo) * px;
        in_range(v).then(|| (pos, extent(v) / 2.0, v))
    };
    let mut values: Vec<f64> = decades.clone();
    // A decade the axis cuts, with no power of ten inside: its 5 or 2.
    for &d in &decades {
        if !in_range(d) && in_range(d * 10.0) {
            values.extend([d * 5.0, d * 2.0]);
        }
        if in_range(d) && !in_range(d * 10.0) {
            values.extend([d * 2.0, d * 5.0]);
        }
    }
    for m in [5.0, 2.0] {
        values.extend(decades.iter().map(|d| d * m));
    }
    let kept = thin(values.iter().filter_map(|&v| candidate(v)).collect());
    if kept.len() >= 3 {
        return kept;
    }
    // A narrow range: the other multiples too.
    for m in [3.0, 7.0, 4.0, 6.0, 8.0, 9.0] {
        values.extend(decades.iter().map(|d| d * m));
    }
    thin(values.iter().filter_map(|&v| candidate(v)).collect())
}

/// Labels of a linear axis from `lo` to `hi`, `px` long: the finest step
/// of 1, 2 or 5 × 10^k whose labels keep their room.
pub fn linear_ticks(lo: f64, hi: f64, px: f64, extent: impl Fn(f64) -> f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let mut step = 10f64.powf((span / 50.0).log10().floor());
    for _ in 0..40 {
        let values: Vec<f64> = ((lo / step).ceil() as i64..=(hi / step).floor() as i64)
            .map(|k| k as f64 * step)
            .collect();
        let room = step / span * px;
        if values.iter().all(|&v| extent(v) + GAP <= room) {
            return values;
        }
        let m = step / 10f64.powf(step.log10().floor());
        step *= if (m - 2.0).abs() < 1e-6 { 2.5 } else { 2.0 };
    }
    vec![lo, hi]
}

/// The nines axis (`x` = log10 1/(1−q)): 0 %, 50 %, 90 %, 99 % … as many
/// as keep their room, the whole nines first.
pub fn nines_ticks(max: f64, px: f64, extent: impl Fn(f64) -> f64) -> Vec<f64> {
    let pos = |x: f64| x / max * px;
    let mut candidates: Vec<(f64, f64, f64)> = (0..=max as usize)
        .map(|k| k as f64)
        .map(|x| (pos(x), extent(x) / 2.0, x))
        .collect();
    let half = 2f64.log10();
    candidates.push((pos(half), extent(half) / 2.0, half));
    thin(candidates)
}

/// A nines position as a percentage: `0 %`, `50 %`, `99.9 %`.
pub fn nines_label(x: f64) -> String {
    let pct = (1.0 - 10f64.powf(-x)) * 100.0;
    if x < 0.01 {
        return "0 %".into();
    }
    let digits = (x.round() as usize).saturating_sub(2);
    format!("{pct:.digits$} %")
}

/// A value in µs on a log axis: each in the unit that suits it, as few
/// digits as it needs (`20 µs`, `500 µs`, `1 ms`, `2.5 ms`).
pub fn log_label(us: f64) -> String {
    let (v, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else if us >= 1.0 {
        (us, "µs")
    } else {
        (us * 1e3, "ns")
    };
    format!("{} {unit}", trim(v))
}

/// A number with at most three decimals, no trailing zeros.
fn trim(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One unit for a whole linear axis of µs up to `hi`, and a label in it.
pub fn linear_label(hi: f64) -> impl Fn(f64) -> String {
    let (scale, unit) = if hi >= 2e3 { (1e3, "ms") } else { (1.0, "µs") };
    move |us: f64| format!("{} {unit}", trim(us / scale))
}

/// Seconds on a time axis.
pub fn seconds_label(s: f64) -> String {
    trim(s)
}

/// A title in lines that fit `width`, and the font size they fit at:
/// the largest from `max` down to `min` that fits on at most two lines;
/// at `min`, as many lines as it takes (never wider than the frame).
pub fn fit_title(text: &str, width: u32, max: u32, min: u32, m: Measure) -> (u32, Vec<String>) {
    for size in (min..=max).rev() {
        let lines = wrap(text, width, size, m);
        if lines.len() <= 2 || size == min {
            return (size, lines);
        }
    }
    (min, wrap(text, width, min, m))
}

/// `text` broken at spaces into lines no wider than `width` (a word wider
/// than the line on its own is cut at characters).
pub fn wrap(text: &str, width: u32, size: u32, m: Measure) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let tried = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if m(&tried, size).0 <= width {
            line = tried;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        line = word.to_string();
        while m(&line, size).0 > width && line.chars().count() > 1 {
            let fits = (1..line.chars().count())
                .rev()
                .find(|&n| m(&line.chars().take(n).collect::<String>(), size).0 <= width)
                .unwrap_or(1);
            lines.push(line.chars().take(fits).collect());
            line = line.chars().skip(fits).collect();
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 51: `1.0 ms`, `900 µs`, `800 µs`, `700 µs` stacked on 90 px;
    /// now a label per decade where it fits, never two within reach.
    #[test]
    fn log_labels_keep_a_decade_each_and_never_stack() {
        let height = 14.0;
        let ticks = log_ticks(20.0, 3_000.0, 400.0, |_| height);
        assert!(
            ticks.contains(&100.0) && ticks.contains(&1_000.0),
            "{ticks:?}"
        );
        assert!(
            ticks.iter().any(|&t| (20.0..100.0).contains(&t)),
            "the bottom decade: {ticks:?}"
        );
        assert!(
            ticks.iter().any(|&t| t > 1_000.0),
            "the top decade: {ticks:?}"
        );
        let pos = |v: f64| (v.ln() - 20f64.ln()) / (3_000f64.ln() - 20f64.ln()) * 400.0;
        for w in ticks.windows(2) {
            assert!(pos(w[1]) - pos(w[0]) >= height + GAP, "{ticks:?}");
        }
        // A short axis thins, never stacks.
        let few = log_ticks(20.0, 3_000.0, 40.0, |_| height);
        assert!(!few.is_empty() && few.len() <= 2, "{few:?}");
        // A narrow range within one decade still gets labels.
        assert!(log_ticks(700.0, 1_100.0, 300.0, |_| height).len() >= 2);
    }

    #[test]
    fn linear_labels_take_the_finest_step_that_fits() {
        let t = linear_ticks(0.0, 200.0, 500.0, |_| 14.0);
        assert_eq!(t.first(), Some(&0.0));
        let step = t[1] - t[0];
        assert!(step / 200.0 * 500.0 >= 20.0, "{t:?}");
        assert!([10.0, 20.0, 25.0, 50.0].contains(&step), "{t:?}");
        let wide = linear_ticks(0.0, 6.12, 300.0, |_| 40.0);
        assert!((wide[1] - wide[0]) / 6.12 * 300.0 >= 46.0, "{wide:?}");
    }

    #[test]
    fn the_nines_axis_labels_its_median_where_it_fits() {
        assert_eq!(nines_label(2f64.log10()), "50 %");
        assert_eq!(nines_label(3.0), "99.9 %");
        let wide = nines_ticks(5.0, 1_000.0, |_| 50.0);
        assert!(wide.contains(&2f64.log10()), "{wide:?}");
        let narrow = nines_ticks(5.0, 250.0, |_| 50.0);
        assert!(!narrow.contains(&2f64.log10()) && narrow.contains(&0.0));
    }

    #[test]
    fn titles_fit_their_frame() {
        let m = |t: &str, size: u32| ((t.chars().count() as u32 * size) / 2, size);
        let text = "RTT over time: p50, p99 (band) and max per interval";
        let (size, lines) = fit_title(text, 2_000, 22, 12, &m);
        assert_eq!((size, lines.len()), (22, 1));
        let (size, lines) = fit_title(text, 200, 22, 12, &m);
        assert!(lines.iter().all(|l| m(l, size).0 <= 200), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(log_label(1_000.0), "1 ms");
        assert_eq!(log_label(2_500.0), "2.5 ms");
        assert_eq!(log_label(50.0), "50 µs");
        assert_eq!(linear_label(5_000.0)(1_500.0), "1.5 ms");
    }
}
