//! The process around the command: its arguments, config, log file, async runtime and exit code.
//! `src/main.rs` is this one call, so the binary needs nothing else of the library.

use super::{Cli, print_error, run};
use crate::config::Config;
use crate::engine::Registry;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs the `ongraph` command with the process's arguments, as the binary does.
pub fn main() -> ExitCode {
    run_main()
}

/// Runs the `ongraph` command with the methods of `registry` (ongraph's own and any a program
/// adds with [`Registry::with`]): `--method`, `ask`, `eval`, the terminal UI and saved sessions
/// all know them. This is how a program of one's own runs a method of one's own.
pub fn main_with(registry: Registry) -> ExitCode {
    if registry.install().is_err() {
        return fail(&anyhow::anyhow!("the program's methods were set twice"));
    }
    run_main()
}

fn run_main() -> ExitCode {
    let cli = Cli::parse_from(asking_by_default(std::env::args_os().collect()));
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(&anyhow::Error::new(e)),
    };
    let _guard = init_logging(cli.log.clone().or_else(|| config.defaults.log_file.clone()));
    crate::http::install_crypto_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    match runtime.block_on(run(cli, config)) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => fail(&e),
    }
}

/// `ongraph "a question?"` is `ongraph ask "a question?"`: a first argument that is no command
/// and holds a space is a question (a one-word typo of a command still gets clap's error).
fn asking_by_default(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory as _;
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else { return args };
    let command = Cli::command();
    let is_command =
        command.get_subcommands().any(|c| c.get_name() == first || c.get_all_aliases().any(|a| a == first))
            || first == "help";
    if !is_command && !first.starts_with('-') && first.contains(char::is_whitespace) {
        args.insert(1, "ask".into());
    }
    args
}

/// One line on stderr: the error and its causes, joined. A reader that stopped reading
/// (`ongraph fix export | head`) is not an error: the output it wanted was written.
fn fail(e: &anyhow::Error) -> ExitCode {
    // Only a write error itself: a network error that wraps one is a real failure.
    if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
        return ExitCode::SUCCESS;
    }
    tracing::error!("{e:#}");
    print_error(e);
    ExitCode::from(1)
}

/// Logs go to a file, never to the terminal (the TUI draws there). A log file that cannot be
/// opened disables logging rather than stopping the program.
fn init_logging(path: Option<PathBuf>) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let path =
        path.or_else(|| dirs::state_dir().or_else(dirs::cache_dir).map(|d| d.join("ongraph").join("ongraph.log")))?;
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = tracing_subscriber::EnvFilter::try_from_env("ONGRAPH_LOG_LEVEL")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).init();
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::asking_by_default;

    fn words(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(std::ffi::OsString::from).collect();
        asking_by_default(args).into_iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_bare_question_is_asked() {
        assert_eq!(words(&["ongraph", "Where is Canberra?"]), ["ongraph", "ask", "Where is Canberra?"]);
        // Commands, options and one-word typos are left to the parser.
        assert_eq!(words(&["ongraph", "ask", "Where?"]), ["ongraph", "ask", "Where?"]);
        assert_eq!(words(&["ongraph", "--config", "a b.toml"]), ["ongraph", "--config", "a b.toml"]);
        assert_eq!(words(&["ongraph", "tui"]), ["ongraph", "tui"]);
        assert_eq!(words(&["ongraph", "akс"]), ["ongraph", "akс"]);
        assert_eq!(words(&["ongraph"]), ["ongraph"]);
    }
}
