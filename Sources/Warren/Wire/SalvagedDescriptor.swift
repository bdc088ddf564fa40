/// What a worker reads of a job message that is no valid descriptor (``JobDecoder/salvage(from:)``), to answer its
/// producer and free its lock: each member as the body's top-level object first gives it, if of its field's type.
///
/// Thread safety: immutable once read.
struct SalvagedDescriptor: Equatable {
    var id: String?
    var type: String?
    var key: String?
    var sequence: UInt64?
    var unique: Bool?
}
