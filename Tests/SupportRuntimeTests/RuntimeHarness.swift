import Testing
import SupportRuntime
import SupportUtilities
import SupportWire
import TestSupport

/// Parent of every runtime suite that uses real sockets or threads; serialized (recursively) so timing-sensitive tests
/// do not compete for the 2 cores.
@Suite(.serialized, .timeLimit(.minutes(2))) enum RuntimeIntegration {}
