//! Turns the parsed command line into a validated plan: every layer of
//! settings applied, every address resolved, every CPU checked. Nothing
//! starts until this succeeds, so bad input fails fast with one clear line.
//!
//! By role: `client.rs` (the client's checks and its engine settings),
//! `profile.rs` (the configuration file's layers and profiles, into a
//! client plan), `server.rs`, `counterpart.rs` (the other role, when the
//! live display switches), `agent.rs`.

pub mod agent;
mod client;
mod counterpart;
mod load;
mod profile;
mod server;
mod settings;

use crate::cli::{
    Cli, ClientArgs, Command, HdrLogArgs, KeyArgs, LogArgs, OutputArgs, RunArgs, ServerArgs,
    TargetArgs, settings_schema,
};
use crate::config::key_file;
use crate::config::layering::{Named, layer};
use crate::config::{self, Baseline, ConfigFile, Settings};
use crate::error::AppError;
use crate::packet_log::{Opening, STDOUT};
use clap::ArgMatches;
pub use client::{ClientPlan, DEFAULT_TX_STAMP_EVERY, ProfileUse};
pub use counterpart::{counterpart_client, counterpart_server};
pub use load::LoadSettings;
use profile::{loopback_plan, remote_client_plan};
pub use server::ServerPlan;
use server::server_plan;
pub use settings::RunSettings;
use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use synapse_engine::protocol::responder_name::{NAMED_SIZE, ResponderName};
use synapse_engine::reflector_admission::{Admission, AllowList};
use synapse_engine::stamp::TimeFormat;
use synapse_engine::stamp_key::StampKey;
use synapse_engine::{
    ClientConfig, EngineError, GroupJoins, MAX_IN_FLIGHT, MulticastOptions, Protocol,
    ReflectorConfig, ReflectorStamping, Role, TcpEchoConfig, ThreadPlacement, Transport,
    choose_cpu, in_flight_bound, resolve, stamp,
};

/// The packet count of a headless run given neither a count nor a time.
pub const DEFAULT_PACKETS: u64 = 10_000;
/// The port `synapse server` listens on by default.
pub const DEFAULT_PORT: u16 = 8080;
/// Silence that ends a reflector session, unless `--session-idle` says otherwise.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(1);

/// How results are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The full-screen live display.
    Ui,
    /// The text report on stdout.
    Text,
    /// One JSON object on stdout.
    Json,
    /// JSON lines on stdout as the run goes, the report last
    /// (`--json-stream`).
    JsonStream,
}

/// Who the client measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An in-process reflector on 127.0.0.1, started for the run.
    Loopback,
    /// A reflector elsewhere.
    Remote(SocketAddr),
}

/// What to do.
#[derive(Debug, Clone)]
// Built once per process: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Plan {
    /// Measure.
    Client(ClientPlan),
    /// Reflect.
    Server(ServerPlan),
}

/// Whether the live display can be used at all.
pub fn ui_possible() -> bool {
    std::io::stdout().is_terminal()
}

/// The matches of the subcommand given (or the top level's).
fn sub_matches(matches: &ArgMatches) -> &ArgMatches {
    matches.subcommand().map_or(matches, |(_, sub)| sub)
}

/// Validates the command line into a plan; `matches` tells which options
/// the user typed (the rest hold clap's defaults).
pub fn plan(cli: Cli, matches: &ArgMatches) -> Result<Plan, AppError> {
    let typed = Settings::from_matches(sub_matches(matches), &settings_schema());
    match cli.command {
        None => loopback_plan(&cli.output, &typed),
        Some(Command::Client(args)) => remote_client_plan(args, typed),
        Some(Command::Server(s)) => server_plan(&s),
        Some(_) => Err(AppError::Usage(
            "this command does not measure anything".into(),
        )),
    }
}

fn output_for(no_ui: bool, json: bool, json_stream: bool) -> Output {
    if json_stream {
        Output::JsonStream
    } else if json {
        Output::Json
    } else if no_ui || !ui_possible() {
        Output::Text
    } else {
        Output::Ui
    }
}

/// The key `--hmac-key-file` names, for a `who` that speaks STAMP.
pub fn stamp_key_of(k: &KeyArgs, stamp: bool, who: &str) -> Result<Option<StampKey>, AppError> {
    let Some(path) = &k.hmac_key_file else {
        return Ok(None);
    };
    if !stamp {
        return Err(AppError::Usage(format!(
            "--hmac-key-file is for STAMP: {who} needs --stamp too"
        )));
    }
    key_file::read(path).map(Some).map_err(AppError::Usage)
}

/// `--log -` puts the rows on stdout, which the JSON report and the live
/// display need for themselves.
fn check_stdout_log(log: Option<&std::path::Path>, shown: Output) -> Result<(), AppError> {
    if log.is_some_and(|p| p.as_os_str() == STDOUT) {
        match shown {
            Output::Json | Output::JsonStream => {
                return Err(AppError::Usage(
                    "--log - and --json (or --json-stream) both want stdout: write the log to a file".into(),
                ));
            }
            Output::Ui => {
                return Err(AppError::Usage(
                    "--log - writes to stdout, which the live display uses: add --no-ui".into(),
                ));
            }
            Output::Text => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_on_stdout_wants_the_text_report() {
        let dash = std::path::Path::new(STDOUT);
        assert!(check_stdout_log(Some(dash), Output::Text).is_ok());
        assert!(check_stdout_log(Some(dash), Output::Json).is_err());
        assert!(check_stdout_log(Some(dash), Output::JsonStream).is_err());
        assert!(check_stdout_log(Some(dash), Output::Ui).is_err());
        let file = std::path::Path::new("run.csv");
        assert!(check_stdout_log(Some(file), Output::Json).is_ok());
    }

    #[test]
    fn a_key_file_without_stamp_is_refused() {
        let none = KeyArgs::default();
        assert!(matches!(stamp_key_of(&none, false, "x"), Ok(None)));
        let some = KeyArgs {
            hmac_key_file: Some("k".into()),
        };
        let e = stamp_key_of(&some, false, "synapse client")
            .unwrap_err()
            .to_string();
        assert!(e.contains("synapse client needs --stamp too"), "{e}");
    }
}
