//! The real binary's `--help`, command by command, against
//! `docs/options.md` as rendered (which `options_md` holds the file to):
//! every option the help lists is in that command's section of the page,
//! and the section lists no other.

use super::{command, commands, full_name, read_doc};
use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn every_commands_help_lists_what_options_md_lists() {
    let page = read_doc(&super::options_md_path());
    let cmd = command();
    for sub in commands(&cmd) {
        let name = full_name(sub);
        let mut args: Vec<&str> = name.split(' ').skip(1).collect();
        args.push("--help");
        let out = Command::new(env!("CARGO_BIN_EXE_synapse"))
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "synapse {args:?} failed");
        let help = String::from_utf8(out.stdout).unwrap();
        let mut from_help = longs(
            help.lines()
                .filter(|l| l.starts_with("  -") || l.starts_with("      --")),
        );
        from_help.remove("help");
        from_help.remove("version");
        let from_page = longs(
            section(&page, &name)
                .lines()
                .filter(|l| l.starts_with("| `-")),
        );
        assert_eq!(
            from_help, from_page,
            "`{name} --help` against its section of docs/options.md \
             (refresh with UPDATE_DOCS=1 cargo test --test docs)"
        );
    }
}

/// The long options named first on each line (`--name` up to a space,
/// `<`, `` ` `` or `,`).
fn longs<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    lines
        .filter_map(|l| {
            let at = l.find("--")?;
            let name: String = l[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The text of `## NAME` up to the next `## `.
fn section<'a>(page: &'a str, name: &str) -> &'a str {
    let heading = format!("\n## {name}\n");
    let Some(at) = page.find(&heading) else {
        panic!("docs/options.md has no section `## {name}`")
    };
    let rest = &page[at + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}
