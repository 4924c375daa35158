fn main() -> std::process::ExitCode {
    majordomus::cli::main()
}
