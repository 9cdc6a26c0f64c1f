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
}
