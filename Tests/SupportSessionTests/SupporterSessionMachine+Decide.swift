import SupportSession
import SupportUtilities
import SupportWire

extension SupporterSessionMachine {
    /// A frame from the device, with a REGISTER's ``Action/authorize(_:)`` answered at once by `authorize`, as the
    /// node's glue answers it with its registry's decision.
    mutating func received(
        _ message: Message, now: Deadline, authorize: (Register) -> RegistrationDecision
    ) -> [Action] {
        received(message, now: now).flatMap { action -> [Action] in
            guard case .authorize(let register) = action else { return [action] }
            return registrationDecided(authorize(register))
        }
    }
}
