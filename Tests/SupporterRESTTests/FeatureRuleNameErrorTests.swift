import Testing

@testable import SupporterREST

@Suite struct FeatureRuleNameErrorTests {
    struct Cause: Error, Sendable {}

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = FeatureRuleNameError(.unknownRule, "maybe", underlying: Cause())
        let two = FeatureRuleNameError(.unknownRule, "maybe")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(one != FeatureRuleNameError(.unknownFeature, "maybe"))
        #expect(one.kind == FeatureRuleNameError(.unknownRule, "never").kind)
        #expect(FeatureRuleNameError.Kind.unknownFeature.description == "unknown_feature")
    }

    @Test func theMessageSaysWhatWouldBeAccepted() {
        let error = FeatureRuleNameError(.unknownRule, "maybe")
        #expect(error.message == "unknown rule 'maybe'; a rule is allow, confirm or deny")
        #expect(error.description == error.message)
        let thrown = #expect(throws: FeatureRuleNameError.self) { try FeatureRuleNames.rule(named: "maybe") }
        #expect(thrown == error)
    }
}
