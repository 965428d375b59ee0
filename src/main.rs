//! The `synapse` binary: parse, plan, run, report, exit with a status that
//! scripts can act on.

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use synapse::cli::{Cli, Command};
use synapse::commands::headless;
use synapse::commands::{interfaces, profiles};
use synapse::console;
use synapse::error::{AppError, exit};
use synapse::plan::{ClientPlan, Output, Plan, plan};
use synapse::report::{Report, write_json, write_text};
use synapse::ui::{self, station::Finale};
use synapse_engine::StopFlag;
use synapse_units::count_of;

fn main() {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(both) => both,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            std::process::exit(exit::PASS);
        }
        // A command that needs a subcommand, given none: its help, exit 2.
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            std::process::exit(exit::USAGE);
        }
        Err(e) => {
            // One line per error, with clap's suggestion and the help to read.
            let args: Vec<String> = std::env::args().collect();
            console::error(&synapse::cli::one_line(&e, &Cli::command(), &args));
            std::process::exit(exit::USAGE);
        }
    };
    init_logging();
    let code = match run(cli, &matches) {
        Ok(code) => code,
        // A reader that stopped reading (`| head`) ended the output: as
        // for any Unix filter, that is a normal end.
        Err(e) if e.is_broken_pipe() => exit::PASS,
        Err(e) => {
            console::error(&e.to_string());
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// Logs go to stderr as `synapse: LEVEL: message` lines, like every other
/// line Synapse writes there, filtered by `RUST_LOG` (default: warnings).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(PlainLines)
        .init();
}

/// `synapse: warning: message key=value`, no timestamps, no colour.
struct PlainLines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "synapse: {level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Ctrl-C, SIGTERM and SIGHUP (a closed terminal, or a service manager's
/// reload) raise the stop flag, so what was measured is reported and logs
/// are flushed; a second signal exits at once (128 + its number). Returns
/// where the first signal's number is kept (0: none yet).
fn install_signal_handlers(stop: &StopFlag) -> Result<Arc<AtomicUsize>, AppError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    let which = Arc::new(AtomicUsize::new(0));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        flag::register_conditional_shutdown(
            sig,
            exit::interrupted_by(sig),
            stop.as_atomic().clone(),
        )?;
        flag::register_usize(sig, Arc::clone(&which), sig as usize)?;
        flag::register(sig, stop.as_atomic().clone())?;
    }
    Ok(which)
}

/// Commands that measure nothing: they print and return.
fn run_tool(command: &Command) -> Result<bool, AppError> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Profiles(args) => profiles::run_command(args, &mut out)?,
        Command::Interfaces { name } => interfaces::run_command(name.as_deref(), &mut out)?,
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut synapse::cli::command(), "synapse", &mut out);
        }
        Command::Man => clap_mangen::Man::new(synapse::cli::command()).render(&mut out)?,
        Command::Server(_)
        | Command::Client(_)
        | Command::Agent(_)
        | Command::Calibrate(_)
        | Command::Compare(_)
        | Command::Plot(_)
        | Command::Trace(_) => {
            return Ok(false);
        }
    }
    out.flush()?;
    Ok(true)
}

fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<i32, AppError> {
    if let Some(command) = &cli.command
        && run_tool(command)?
    {
        return Ok(exit::PASS);
    }
    match &cli.command {
        Some(Command::Compare(args)) => {
            return synapse::commands::compare::run(args, &mut std::io::stdout().lock());
        }
        Some(Command::Plot(args)) => return synapse::commands::plot::run(args),
        _ => {}
    }
    if let Some(Command::Agent(args)) = cli.command {
        return synapse::agent::run(args, matches);
    }
    if let Some(Command::Trace(args)) = &cli.command {
        let stop = StopFlag::new();
        let _ = install_signal_handlers(&stop)?;
        return synapse::commands::trace::run(args, &stop, &mut std::io::stdout().lock());
    }
    if let Some(Command::Calibrate(args)) = &cli.command {
        let stop = StopFlag::new();
        let _ = install_signal_handlers(&stop)?;
        return synapse::calibrate::run(args, &stop);
    }
    let plan = plan(cli, matches)?;
    if let Plan::Client(p) = &plan {
        p.warnings.iter().for_each(|w| console::warning(w));
        p.profile.notes.iter().for_each(|n| console::note(n));
    }
    match plan {
        Plan::Client(p) if p.output == Output::Ui => {
            let finale = ui::run(ui::Start::Client(p.clone()))?;
            let code = finish_ui(&finale)?;
            return save_after_run(&p, finale.report.as_ref(), code);
        }
        Plan::Server(p) if p.output == Output::Ui => {
            return finish_ui(&ui::run(ui::Start::Server(p))?);
        }
        _ => {}
    }
    let stop = StopFlag::new();
    let signal = install_signal_handlers(&stop)?;
    match plan {
        Plan::Client(p) => {
            let mut report = headless::run_client(&p, &stop)?;
            if report.log.as_ref().is_some_and(|l| l.reader_closed) {
                // `--log - | head`: the reader had what it wanted.
                return Ok(exit::PASS);
            }
            let n = signal.load(Ordering::Relaxed);
            report.signal = (report.interrupted && n > 0).then_some(n as i32);
            print_report(&report, p.output, log_on_stdout(p.log.as_deref()))?;
            let code = exit_code(&report);
            save_after_run(&p, Some(&report), code)
        }
        // With the log on stdout, the server's own lines go to stderr.
        Plan::Server(p) if log_on_stdout(p.log.as_deref()) => {
            headless::run_server(&p, &stop, &mut std::io::stderr())
        }
        Plan::Server(p) => headless::run_server(&p, &stop, &mut std::io::stdout()),
    }
}

/// Whether `--log -` put the rows on stdout.
fn log_on_stdout(log: Option<&std::path::Path>) -> bool {
    log.is_some_and(|p| p.as_os_str() == synapse::packet_log::STDOUT)
}

/// The report's exit status (docs/reports.md): 0 PASS, 3 FAIL, 4
/// INCONCLUSIVE, 128 + the signal INTERRUPTED, 1 a run whose log could not
/// be written; that cause is said on stderr too, whatever stdout carries.
fn exit_code(report: &Report) -> i32 {
    if let Some(why) = report.run_failure() {
        console::error(&format!("{why}: the run was ended there (exit 1)"));
    }
    report.exit_status()
}

/// `--save-profile` / `--set-baseline`, once the report is out: a failure
/// here never hides what was measured.
fn save_after_run(plan: &ClientPlan, report: Option<&Report>, code: i32) -> Result<i32, AppError> {
    let wants = plan.profile.save_as.is_some() || plan.profile.set_baseline;
    match report {
        Some(r) if wants => {
            for line in profiles::after_run(plan, r)? {
                console::note(&line);
            }
        }
        None if wants => console::note("nothing was measured, so no profile or baseline was saved"),
        _ => {}
    }
    Ok(code)
}

/// After the live display closes: the summary on the normal screen. When
/// nothing was measured because the peer could not be reached, the exit
/// status says so, as it does headless.
fn finish_ui(finale: &Finale) -> Result<i32, AppError> {
    for w in &finale.warnings {
        console::warning(w);
    }
    let mut code = exit::PASS;
    if let Some(report) = &finale.report {
        print_report(report, Output::Text, false)?;
        code = exit_code(report);
    }
    let mut out = std::io::stdout().lock();
    if let Some(t) = finale.server {
        writeln!(
            out,
            "Reflector: {}, {}, {} echoed",
            count_of(t.sessions, "session"),
            count_of(t.packets, "packet"),
            count_of(t.bytes, "byte")
        )?;
    }
    if let Some(log) = &finale.server_log {
        writeln!(
            out,
            "Server log: {} written to {}",
            count_of(log.rows, "answer"),
            log.path.display()
        )?;
        if let Some(e) = &log.error {
            console::error(&e.to_string());
            code = exit::RUNTIME;
        }
    }
    if finale.report.is_none() && finale.server.is_none() {
        writeln!(out, "Nothing was measured.")?;
        if let Some((why, failed)) = &finale.failure {
            console::error(why);
            code = *failed;
        }
    }
    Ok(code)
}

/// The report on stdout, or on stderr when stdout carries the log.
fn print_report(report: &Report, output: Output, to_stderr: bool) -> Result<(), AppError> {
    let (mut out, tty): (Box<dyn Write>, bool) = if to_stderr {
        (Box::new(std::io::stderr()), std::io::stderr().is_terminal())
    } else {
        (
            Box::new(std::io::stdout().lock()),
            std::io::stdout().is_terminal(),
        )
    };
    match output {
        Output::Json => write_json(&mut out, report)?,
        Output::JsonStream => synapse::report::json_stream::write_report(&mut out, report)?,
        Output::Text | Output::Ui => {
            let color = tty && std::env::var_os("NO_COLOR").is_none();
            write_text(&mut out, report, color)?;
        }
    }
    out.flush()?;
    Ok(())
}
