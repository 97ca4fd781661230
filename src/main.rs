//! The `dbsweep` binary: hands the arguments to the library and exits with its code.

fn main() {
    // Die quietly when stdout is a closed pipe (`dbsweep targets | head`), like other Unix
    // tools, instead of panicking on the failed write.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(dbsweep::main(std::env::args_os()));
}
