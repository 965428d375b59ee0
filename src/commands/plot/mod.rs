//! `synapse plot`: the pictures people share, drawn with `plotters` (SVG
//! or PNG by the file's name), one pane above the other:
//!
//! - **percentiles**: each run's distribution on HdrHistogram's log
//!   1/(1−q) axis (50 %, 90 %, 99 %, 99.9 % … equally spaced), overlaid;
//! - **time**: per interval (an interval log's, or a JSON report's slice),
//!   p50 and p99 with the band between them and the maximum; an interval
//!   without replies is a gap, shaded, never a zero; loss marked, outages
//!   shaded from where they began;
//! - **split**: per run that has one, the segments of the round trip per
//!   interval (their means, which add up to the sampled packets' mean
//!   RTT), stacked;
//! - **load**: per load run (`--load`'s JSON report), the load each way and
//!   the round trip over time, phases marked, and each phase's stage split
//!   ([`load_pane`]).
//!
//! Every label is measured with the embedded font (see [`axes`]); titles
//! fit inside their frame and legends sit below the data ([`frame`]).

mod axes;
mod chart;
mod data;
mod frame;
mod load_pane;
mod panes;

use crate::cli::PlotArgs;
use crate::error::{AppError, exit};
use crate::report::load_runs::LoadRead;
use crate::report::runs;
use data::Run;
use frame::FONT;
use panes::Fallible;
use plotters::coord::Shift;
use plotters::prelude::*;

static DEJAVU: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// One pane of the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pane {
    Percentiles,
    Time,
    /// The split of run `k`.
    Split(usize),
    /// Load run `k`'s load, round trip and stages.
    Load(usize),
}

/// Runs `synapse plot`; the exit status.
pub fn run(args: &PlotArgs) -> Result<i32, AppError> {
    let path = &args.output;
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
    if !matches!(ext.as_deref(), Some("svg" | "png")) {
        return Err(AppError::Usage(format!(
            "plot -o {}: the picture is FILE.svg or FILE.png",
            path.display()
        )));
    }
    // Said before anything is read: a picture is not replaced by mistake.
    if !args.force && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(AppError::Usage(format!(
            "plot -o {}: the file exists (--force replaces it)",
            path.display()
        )));
    }
    let prefix = runs::prefix(args.peer.as_deref());
    let (mut drawn, mut loads) = (Vec::new(), Vec::new());
    for s in &args.inputs {
        let inputs = runs::load(s, args.config.as_ref(), &prefix)?;
        // A multicast run: the group (each request's slowest answer), then
        // each responder as a run of its own.
        drawn.extend(
            inputs
                .iter()
                .flat_map(|i| std::iter::once(i).chain(i.responders.iter().map(|r| &r.input)))
                .map(|i| Run::of(i, &prefix)),
        );
        loads.extend(
            inputs
                .iter()
                .filter_map(|i| Some((data::short(&i.label), i.load.clone()?))),
        );
    }
    let (panes, notes) = match load_panes(&args.kind, drawn.len(), loads.len())? {
        Some(panes) => (panes, Vec::new()),
        None => panes_of(&args.kind, &drawn)?,
    };
    // Text is measured with the font for either back end.
    plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU)
        .map_err(|_| AppError::Runtime(anyhow::anyhow!("the embedded font is broken")))?;
    let bytes = picture(
        ext.as_deref() == Some("svg"),
        args.width,
        (&drawn, &loads),
        &panes,
    )
    .map_err(|e| AppError::Runtime(anyhow::anyhow!("plot: cannot draw: {e}")))?;
    crate::files::write_whole("plot -o", path, &bytes, args.force)?;
    for note in notes {
        crate::console::note(&note);
    }
    Ok(exit::PASS)
}

/// Load runs are drawn as such: for `--kind load`, and for `all` when
/// every run is one (their whole-run percentiles would mix idle and loaded
/// probes). `None`: the other kinds decide.
fn load_panes(kind: &str, runs: usize, loads: usize) -> Result<Option<Vec<Pane>>, AppError> {
    match kind {
        "load" if loads == 0 => Err(AppError::Usage(
            "plot --kind load: none of the inputs is a load run's JSON report (synapse client --load --json)".into(),
        )),
        "load" => Ok(Some((0..loads).map(Pane::Load).collect())),
        "all" if loads > 0 && loads == runs => Ok(Some((0..loads).map(Pane::Load).collect())),
        _ => Ok(None),
    }
}

/// The panes `--kind` asks for that the runs can give, and a note for
/// each run about what of it is not drawn, and why; a kind none of the
/// runs can give is an error that says why for each.
fn panes_of(kind: &str, runs: &[Run]) -> Result<(Vec<Pane>, Vec<String>), AppError> {
    let timed = runs.iter().any(|r| !r.rows.is_empty());
    let splits: Vec<Pane> = (0..runs.len())
        .filter(|&k| runs[k].split.is_some())
        .map(Pane::Split)
        .collect();
    let no_time = |r: &Run| {
        r.why_no_time
            .map(|why| format!("{}: not drawn over time ({why})", r.name))
    };
    let no_split = |r: &Run| {
        r.split
            .is_none()
            .then(|| format!("{}: its split not drawn ({})", r.name, r.why_no_split))
    };
    let refuse = |what: &str, why: Vec<String>| {
        AppError::Usage(format!(
            "plot --kind {kind}: no {what} to draw: {}",
            why.join("; ")
        ))
    };
    let (panes, notes): (Vec<Pane>, Vec<String>) = match kind {
        "percentiles" => (vec![Pane::Percentiles], Vec::new()),
        "time" if !timed => {
            return Err(refuse(
                "run over time",
                runs.iter().filter_map(no_time).collect(),
            ));
        }
        "time" => (vec![Pane::Time], runs.iter().filter_map(no_time).collect()),
        "split" if splits.is_empty() => {
            return Err(refuse("split", runs.iter().filter_map(no_split).collect()));
        }
        "split" => (splits, runs.iter().filter_map(no_split).collect()),
        _ => {
            let mut panes = vec![Pane::Percentiles];
            panes.extend(timed.then_some(Pane::Time));
            panes.extend(splits);
            let notes = runs
                .iter()
                .flat_map(|r| no_time(r).or_else(|| no_split(r)))
                .collect();
            (panes, notes)
        }
    };
    Ok((panes, notes))
}

/// The picture, SVG or PNG, `width` wide, a pane 9/16 as high each.
fn picture(svg: bool, width: u32, runs: Runs<'_>, panes: &[Pane]) -> Fallible<Vec<u8>> {
    let (w, h) = (width, width * 9 / 16 * panes.len() as u32);
    if svg {
        let mut text = String::new();
        draw(
            SVGBackend::with_string(&mut text, (w, h)).into_drawing_area(),
            runs,
            panes,
        )?;
        return Ok(text.into_bytes());
    }
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    draw(
        BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
        runs,
        panes,
    )?;
    png_of(&rgb, w, h)
}

/// An RGB picture as PNG.
fn png_of(rgb: &[u8], w: u32, h: u32) -> Fallible<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(rgb)?;
    Ok(bytes)
}

/// The runs, and the load runs among them by name.
type Runs<'a> = (&'a [Run], &'a [(String, LoadRead)]);

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    (runs, loads): Runs<'_>,
    panes: &[Pane],
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    // Every label is measured as the back end will draw it.
    let measure = |text: &str, size: u32| {
        root.estimate_text_size(text, &(FONT, size).into_text_style(&root))
            .map(|(w, _)| (w, size))
            .unwrap_or((text.chars().count() as u32 * size, size))
    };
    let timed: Vec<(usize, &Run)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.rows.is_empty())
        .collect();
    for (area, pane) in root.split_evenly((panes.len(), 1)).iter().zip(panes) {
        match *pane {
            Pane::Percentiles => panes::percentiles(area, runs, &measure)?,
            Pane::Time => panes::over_time(area, &timed, &measure)?,
            Pane::Split(k) => {
                if let Some(s) = &runs[k].split {
                    panes::split(area, &runs[k].name, s, &measure)?;
                }
            }
            Pane::Load(k) => load_pane::draw(area, &loads[k].0, &loads[k].1, FONT)?,
        }
    }
    root.present()?;
    Ok(())
}
