//! `synapse trace`: resolve the destination, trace its flow (or K flows)
//! with the engine, judge the paths by the statistics' rule, report as
//! text or JSON, and exit with the verdict.

use crate::cli::TraceArgs;
use crate::error::AppError;
use crate::plan::DEFAULT_PORT;
use crate::report::trace::{TraceReport, json::trace_json, text::write_trace_text};
use std::io::Write;
use std::net::IpAddr;
use synapse_engine::StopFlag;
use synapse_engine::trace::{TraceConfig, run_trace};

/// The source ports to trace from: `--source-port P` and the K-1 after
/// it, or K of the kernel's choosing (0).
pub fn ports(source_port: Option<u16>, paths: u16) -> Result<Vec<u16>, AppError> {
    match source_port {
        None => Ok(vec![0; usize::from(paths)]),
        Some(0) => Err(AppError::Usage(
            "--source-port 0: give a port, or leave it out for any".into(),
        )),
        Some(p) => {
            let last = u32::from(p) + u32::from(paths) - 1;
            if last > u32::from(u16::MAX) {
                return Err(AppError::Usage(format!(
                    "--source-port {p} with --paths {paths} runs past port 65535"
                )));
            }
            Ok((p..=last as u16).collect())
        }
    }
}

/// Names of `addrs`, looked up side by side (a slow resolver costs one
/// timeout, not one per address).
pub fn names_of(addrs: Vec<IpAddr>) -> Vec<(IpAddr, Option<String>)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = addrs
            .into_iter()
            .map(|a| s.spawn(move || (a, synapse_engine::name_of(a))))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Runs `synapse trace`; returns the exit status.
pub fn run(args: &TraceArgs, stop: &StopFlag, out: &mut dyn Write) -> Result<i32, AppError> {
    let destination = synapse_engine::resolve(&args.target, DEFAULT_PORT)?;
    if let Some(b) = args.bind
        && b.is_ipv6() != destination.is_ipv6()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} is not of {destination}'s address family"
        )));
    }
    let cfg = TraceConfig {
        destination,
        bind: args.bind,
        ports: ports(args.source_port, args.paths)?,
        probes: args.probes,
        max_ttl: args.max_ttl,
        rate: args.rate,
        timeout: args.timeout,
    };
    let outcome = run_trace(&cfg, stop)?;
    let mut report = TraceReport::new(
        destination,
        outcome.local,
        &outcome.paths,
        outcome.counts,
        outcome.interrupted,
    )
    .asked(args.probes, args.max_ttl, args.rate);
    if args.resolve {
        let addrs = report.addresses();
        let found = names_of(addrs);
        report.resolve(|a| {
            found
                .iter()
                .find(|(x, _)| *x == a)
                .and_then(|(_, n)| n.clone())
        });
    }
    if args.json {
        writeln!(out, "{}", trace_json(&report))?;
    } else {
        write_trace_text(out, &report)?;
    }
    out.flush()?;
    Ok(report.exit_status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_run_in_a_row_from_the_one_given() {
        assert_eq!(ports(None, 3).unwrap(), [0, 0, 0]);
        assert_eq!(ports(Some(40_000), 3).unwrap(), [40_000, 40_001, 40_002]);
        assert!(ports(Some(65_535), 2).is_err());
        assert!(ports(Some(0), 1).is_err());
        assert_eq!(ports(Some(65_535), 1).unwrap(), [65_535]);
    }
}
