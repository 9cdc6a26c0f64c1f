internal import COpenSSL
import SupportUtilities

/// The process's OpenSSL library as a whole.
public enum OpenSSLLibrary {
    /// Initializes OpenSSL without its `atexit` cleanup. Call it first in a program's `main`, before anything uses
    /// TLS or a digest (only the first initialization decides). A program that exits while event-loop threads still
    /// hold TLS connections (a CLI leaving on Ctrl-C) would otherwise have OpenSSL free its global state under those
    /// threads, and crash on the way out. The operating system takes the memory back at exit anyway.
    public static func initializeWithoutExitCleanup() {
        _ = OPENSSL_init_crypto(rs_OPENSSL_INIT_NO_ATEXIT(), nil)
    }

    /// The OpenSSL this process runs with (the shared library's own text, e.g. `OpenSSL 3.0.17 1 Jul 2025`).
    public static var versionText: String {
        OpenSSL_version(Int32(OPENSSL_VERSION)).map { String(cString: $0) } ?? "OpenSSL (version unknown)"
    }
}
