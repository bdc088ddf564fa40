import Foundation
import Testing

@testable import Warren

@Suite("OperationDescriptor ids")
struct OperationDescriptorIDTests {
    @Test(arguments: [
        "a", "job-1", "0b7c9d1e-5f3a-4c2b-9e8d-7a6b5c4d3e2f", "ns:list.7_x", String(repeating: "x", count: 128),
    ])
    func validIDs(_ id: String) {
        #expect(OperationDescriptor.problem(withID: id) == nil)
    }

    @Test(arguments: ["", "has space", "wild*", "wild#", "slash/y", "ünï", String(repeating: "x", count: 129)])
    func invalidIDs(_ id: String) {
        #expect(OperationDescriptor.problem(withID: id) != nil)
    }

    @Test func generatedIDsAreValid() {
        #expect(OperationDescriptor.problem(withID: OperationDescriptor(type: "t", sequence: 1).id) == nil)
        #expect(OperationDescriptor.problem(withID: JobRequest(type: "t").id) == nil)
    }
}
