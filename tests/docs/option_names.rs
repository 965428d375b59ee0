//! README.md and every `docs/*.md` name only options some command has: a
//! `--name` in the text must be a long option of `synapse` or of one of its
//! subcommands, or one of the few other programs' options listed here.

use super::{command, commands, read_doc, root};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Options of other programs that the documents show, with whose they are.
/// Each must be used somewhere and must not be a Synapse option.
const FOREIGN: &[(&str, &str)] = &[
    ("release", "cargo run --release, cargo build --release"),
    ("full-rtt", "sockperf ping-pong --tcp --full-rtt"),
    ("reuse", "tests/lab/report --reuse (the lab's last sheets)"),
    ("test", "cargo test --test"),
    ("all-targets", "cargo clippy --all-targets"),
    ("path", "cargo install --path"),
    (
        "enable-feature",
        "prometheus --enable-feature=native-histograms",
    ),
    ("config.file", "prometheus --config.file"),
    ("web.listen-address", "prometheus --web.listen-address"),
    ("storage.tsdb.path", "prometheus --storage.tsdb.path"),
    ("data-urlencode", "curl --data-urlencode"),
    ("exec", "ncat --exec"),
    ("sport", "traceroute -U --sport P -p PORT"),
    ("purge", "dpkg --purge"),
    ("full", "systemctl edit --full"),
    ("now", "systemctl enable --now"),
    ("mode", "iptables -m statistic --mode random"),
    ("probability", "iptables -m statistic --probability"),
];

#[test]
fn documents_name_only_options_that_exist() {
    let known = synapse_options();
    let mut unknown = Vec::new();
    let mut foreign_used = BTreeSet::new();
    for file in documents() {
        let text = read_doc(&file);
        let shown = file
            .strip_prefix(root())
            .unwrap_or(&file)
            .display()
            .to_string();
        for (line, name) in option_names(&text) {
            if known.contains(&name) {
                continue;
            }
            match FOREIGN.iter().find(|(f, _)| *f == name) {
                Some((f, _)) => {
                    foreign_used.insert(*f);
                }
                None => unknown.push(format!("{shown}:{line}: --{name}")),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "options no command has (a typo, a removed option, or another program's: \
         then add it to FOREIGN in tests/docs/option_names.rs):\n  {}",
        unknown.join("\n  ")
    );
    for (name, whose) in FOREIGN {
        assert!(
            !known.contains(*name),
            "--{name} is Synapse's own, not {whose}'s"
        );
        assert!(
            foreign_used.contains(name),
            "--{name} ({whose}) is used by no document: remove it from FOREIGN"
        );
    }
}

#[test]
fn the_scan_finds_options_and_only_options() {
    let text = "run `synapse --no-ui --json`, then |---|---| and --- and <!-- x -->\n\
                a--b, `--config.file=x.yml`. Or --rate.";
    let names: Vec<String> = option_names(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["no-ui", "json", "config.file", "rate"]);
    assert!(!synapse_options().contains("made-up-option"));
}

/// Every long option of every command (`--help` and `--version` too).
fn synapse_options() -> BTreeSet<String> {
    let cmd = command();
    commands(&cmd)
        .into_iter()
        .flat_map(|c| c.get_arguments())
        .filter_map(|a| a.get_long())
        .map(str::to_string)
        .collect()
}

/// README.md and `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let docs = root().join("docs");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    pages.retain(|p| p.extension().is_some_and(|e| e == "md"));
    pages.sort();
    assert!(!pages.is_empty(), "no pages in {}", docs.display());
    files.extend(pages);
    files
}

/// The `--name`s in a text, with their line numbers: two dashes not
/// following a word or a dash, then a lower-case letter, then letters,
/// digits, dashes and dots (a trailing dot ends a sentence).
fn option_names(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        let mut i = 0;
        while i + 2 < b.len() {
            let starts = &b[i..i + 2] == b"--"
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b"-_".contains(&b[i - 1])))
                && b[i + 2].is_ascii_lowercase();
            if !starts {
                i += 1;
                continue;
            }
            let end = (i + 2..b.len())
                .find(|&j| {
                    !(b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b"-.".contains(&b[j]))
                })
                .unwrap_or(b.len());
            let name = line[i + 2..end].trim_end_matches(['.', '-']);
            found.push((n + 1, name.to_string()));
            i = end;
        }
    }
    found
}
