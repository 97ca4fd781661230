//! The `dbsweep` binary: hands the arguments to the library and exits with its code.
//!
//! SIGPIPE stays ignored, as Rust sets it: a closed stdout (`dbsweep targets | head -1`)
//! is a write error the commands treat as the reader wanting no more (they end quietly),
//! and a peer closing a socket mid-write is an error of that connection, not the end of
//! the run and its cleanup.

fn main() {
    std::process::exit(dbsweep::main(std::env::args_os()));
}
