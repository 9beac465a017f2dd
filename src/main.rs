//! The `stampede` command: argument parsing and wiring only.

fn main() {
    eprintln!("stampede: no subcommands yet");
    std::process::exit(2);
}
