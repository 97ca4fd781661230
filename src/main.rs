//! The `dbsweep` binary: hands the arguments to the library and exits with its code.

fn main() {
    std::process::exit(dbsweep::main(std::env::args_os()));
}
