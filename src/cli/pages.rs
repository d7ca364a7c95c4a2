//! What is generated from the clap definitions beside `--help`: the man pages (one per
//! subcommand) and the fish completions of positional values.

use super::Cli;

/// The man pages there are: `rankscope` and one per subcommand at any depth, named as
/// clap_mangen refers to them (`rankscope-mem-diff`).
/// The `help` subcommands are left out: `rankscope help diff` prints the same text as
/// `rankscope diff --help`, which the diff page already holds.
pub fn man_pages() -> Vec<clap::Command> {
    fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
        let mut page = cmd.clone();
        if page.find_subcommand("help").is_some() {
            page = page.mut_subcommand("help", |h| h.hide(true));
        }
        out.push(page);
        for sub in cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        {
            walk(sub, out);
        }
    }
    let mut cmd = <Cli as clap::CommandFactory>::command();
    // Building sets each subcommand's display name, `rankscope-diff`.
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out);
    out
}

/// The page name of a command from `man_pages`: `rankscope-mem-diff`.
pub fn man_page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string()
}

/// Fish completions for the values of positional arguments (`schema summary`,
/// `completions fish`, `man diff`), which clap_complete's fish generator leaves out.
pub fn fish_positional_values() -> String {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let mut out = String::new();
    for sub in cmd.get_subcommands() {
        let values: Vec<(String, String)> = if sub.get_name() == "man" {
            man_pages()
                .iter()
                .skip(1)
                .map(|p| {
                    let name = man_page_name(p);
                    let page = name.trim_start_matches("rankscope-").to_string();
                    let about = p.get_about().map(|a| a.to_string()).unwrap_or_default();
                    (page, about)
                })
                .collect()
        } else {
            sub.get_positionals()
                .flat_map(|a| a.get_possible_values())
                .filter(|v| !v.is_hide_set())
                .map(|v| {
                    let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
                    (v.get_name().to_string(), help)
                })
                .collect()
        };
        for (value, help) in values {
            out.push_str(&format!(
                "complete -c rankscope -n \"__fish_rankscope_using_subcommand {}\" -f -a \"{}\" -d '{}'\n",
                sub.get_name(),
                value,
                help.replace('\\', "\\\\").replace('\'', "\\'")
            ));
        }
    }
    out
}
