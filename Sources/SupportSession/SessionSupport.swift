// Small helpers both session machines share.
import SupportWire
import SupportUtilities
import SupportVocabulary

extension Duration {
    /// `self + other`, clamped to the representable range instead of trapping: a deadline computed from an absurd
    /// caller-supplied time must not crash the node (`Duration.+` traps on overflow).
    func saturatingAdding(_ other: Duration) -> Duration {
        let (sum, overflow) = attoseconds.addingReportingOverflow(other.attoseconds)
        guard overflow else { return Duration(attoseconds: sum) }
        return Duration(attoseconds: other.attoseconds > 0 ? .max : .min)
    }
}

extension Message {
    /// Whether the frame encodes within the 16 KiB every node accepts before and after HELLO (SPEC §3.2): what a
    /// machine sends on a local command must, or the command is refused before any state changes.
    var encodesWithinDefaultLimit: Bool {
        do throws(WireError) {
            _ = try FrameEncoder().encode(self)
            return true
        } catch {
            return false
        }
    }
}

/// What a session machine does with a frame by its type. Connection-level frames (types below `0x10`) belong to §7 on
/// an open connection, but the machines are total over `Message`, so a node that forwards every frame stays correct:
/// HELLO and HELLO_ACK on an open connection are a protocol error (§7 `open | HELLO or HELLO_ACK | closed`); PING,
/// PONG and GOAWAY are the connection's business and change no session state.
enum FrameRouting: Equatable {
    /// A session frame (`0x10`–`0x1F`, and `0x21`): the machine's table decides.
    case session
    /// PING, PONG, GOAWAY: no session action.
    case connectionOnly
    /// HELLO, HELLO_ACK: close with `protocol_error`, this text.
    case violation(String)

    init(_ message: Message) {
        switch message {
        case .hello, .helloAck:
            self = .violation("\(message.frameType.specName) is not allowed on an open connection (SPEC §7)")
        case .ping, .pong, .goAway:
            self = .connectionOnly
        case .register, .registerResult, .connectionRequest, .connectionResponse, .requestAbort, .sessionStarted,
            .sessionEnd, .sessionError, .voipState, .featureRequest, .featureAnswer, .featureRevoke, .sessionMessage,
            .messageAck, .resume, .resumeResult, .featureWithdraw:
            self = .session
        }
    }
}

extension SupporterSessionMachine {
    /// `text` cut to the wire's 256 bytes on a character boundary; nil when nothing is left.
    static func wireText(_ text: String) -> String? {
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= WireLimits.textLength else { break }
            result.append(character)
            bytes += size
        }
        return result.isEmpty ? nil : result
    }
}
