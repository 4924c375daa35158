//! Names the configurations the operating-system seams choose between.

fn main() {
    cfg_aliases::cfg_aliases! {
        // Linux's own facilities (inotify, pidfds, /proc), unless the portable
        // implementations are asked for.
        linux_native: { all(target_os = "linux", not(feature = "portable")) },
        // macOS's own facilities (`renamex_np`), likewise.
        macos_native: { all(target_os = "macos", not(feature = "portable")) },
    }
}
