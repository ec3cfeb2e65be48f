//! The `ongraph` binary: the library's command, run with this process's arguments.

fn main() -> std::process::ExitCode {
    ongraph::main()
}
