//! `docs/options.md`: every command's arguments and options, rendered as
//! Markdown from the clap command tree, and the test that keeps the file
//! equal to the rendering.

use super::{command, commands, full_name, options_md_path};
use clap::{Arg, ArgAction, Command};
use std::fmt::Write;

const REFRESH: &str = "UPDATE_DOCS=1 cargo test --test docs";

#[test]
fn options_md_is_generated_from_the_command_line() {
    let rendered = render(&command());
    let path = options_md_path();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v != "0") {
        std::fs::write(&path, &rendered).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk != rendered {
        let first = on_disk
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(on_disk.lines().count().min(rendered.lines().count()));
        panic!(
            "docs/options.md differs from the command line (first at line {}):\n  \
             file:      {:?}\n  rendered:  {:?}\nRefresh it with `{REFRESH}` and commit it.",
            first + 1,
            on_disk.lines().nth(first).unwrap_or("(end of file)"),
            rendered.lines().nth(first).unwrap_or("(end of file)"),
        );
    }
}

/// The whole page.
pub fn render(root: &Command) -> String {
    let mut out = String::new();
    out.push_str("# Options\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from the command line's definition (src/cli/) by tests/docs.\n     \
         Do not edit: refresh with `{REFRESH}`. -->\n"
    );
    out.push_str(
        "Every argument and option of every command, as `synapse COMMAND --help` \
         gives them. Every command also takes `-h` (a summary of its help) and \
         `--help`; `synapse --version` prints the version.\n\n",
    );
    let all = commands(root);
    for cmd in &all {
        let name = full_name(cmd);
        let _ = writeln!(out, "- [`{name}`](#{})", anchor(&name));
    }
    for cmd in all {
        out.push('\n');
        render_command(&mut out, cmd);
    }
    out
}

/// One command's section: what it does, its usage, its arguments and its
/// options.
fn render_command(out: &mut String, cmd: &Command) {
    let _ = writeln!(out, "## {}\n", full_name(cmd));
    if let Some(about) = cmd.get_about() {
        let _ = writeln!(out, "{}.\n", about.to_string().trim_end_matches('.'));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage: Vec<&str> = usage
        .trim()
        .trim_start_matches("Usage:")
        .lines()
        .map(str::trim)
        .collect();
    let _ = writeln!(out, "```\n{}\n```\n", usage.join("\n"));
    let subs: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if !subs.is_empty() {
        out.push_str("| command | what it does |\n|---|---|\n");
        for sub in subs {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let name = full_name(sub);
            let _ = writeln!(out, "| [`{name}`](#{}) | {} |", anchor(&name), cell(&about));
        }
        out.push('\n');
    }
    let positionals: Vec<&Arg> = cmd.get_positionals().filter(|a| !a.is_hide_set()).collect();
    if !positionals.is_empty() {
        out.push_str("| argument | meaning |\n|---|---|\n");
        for arg in positionals {
            let name = arg
                .get_value_names()
                .map(|v| v.join(" "))
                .unwrap_or_default();
            let _ = writeln!(out, "| `{}` | {} |", cell(&name), cell(&meaning(arg)));
        }
        out.push('\n');
    }
    let options: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && shown(a))
        .collect();
    if !options.is_empty() {
        out.push_str("| option | default | meaning |\n|---|---|---|\n");
        for arg in options {
            let (default, meaning) = default_and_meaning(arg);
            let _ = writeln!(out, "| {} | {} | {} |", flag(arg), default, meaning);
        }
    } else {
        out.push_str("No options besides `-h`, `--help`.\n");
    }
}

/// Options listed: all but clap's own `--help` and `--version`.
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set()
        && !matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

/// `-s`, `--long <VALUE>`, and whether it may be repeated.
fn flag(arg: &Arg) -> String {
    let mut names = Vec::new();
    if let Some(s) = arg.get_short() {
        names.push(format!("`-{s}`"));
    }
    if let Some(l) = arg.get_long() {
        let value = match (arg.get_action().takes_values(), arg.get_value_names()) {
            (true, Some(v)) => format!(" <{}>", v.join(" ")),
            (true, None) => format!(" <{}>", arg.get_id().as_str().to_uppercase()),
            (false, _) => String::new(),
        };
        names.push(format!("`--{l}{value}`"));
    }
    let mut text = cell(&names.join(", "));
    if matches!(arg.get_action(), ArgAction::Append) {
        text.push_str(" (repeatable)");
    }
    text
}

/// The default and the meaning cells: the default clap fills in, else the
/// one the help text states as `[default: …]` (taken out of the meaning).
fn default_and_meaning(arg: &Arg) -> (String, String) {
    let mut text = meaning(arg);
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    let mut default = if arg.get_action().takes_values() {
        values.join(", ")
    } else {
        String::new()
    };
    if let Some(at) = text.find(" [default: ")
        && let Some(len) = text[at..].find(']')
    {
        if default.is_empty() {
            default = text[at + 11..at + len].to_string();
        }
        text.replace_range(at..=at + len, "");
        text = text.replace(" .", ".").replace("..", ".");
    }
    (cell(&default), cell(&text))
}

/// The long help (else the short), and the values it may take when clap
/// knows them.
fn meaning(arg: &Arg) -> String {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut text = help.trim().trim_end_matches('.').to_string();
    if !text.is_empty() {
        text.push('.');
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if arg.get_action().takes_values() && !values.is_empty() {
        let _ = write!(text, " One of {}.", values.join(", "));
    }
    text
}

/// Text that stays inside one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// GitHub's anchor for a heading: lower case, spaces to dashes.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}
