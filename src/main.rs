//! The `rackbench` binary: parse the command line, run, map to an exit code.

fn main() -> std::process::ExitCode {
    rackbench::cli::main()
}
