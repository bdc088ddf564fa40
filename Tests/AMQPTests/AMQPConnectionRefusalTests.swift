import AMQP
import Foundation
import Glibc
import Testing

/// How a connection that never reaches a broker fails: whether trying again later may do (``AMQPError/Code``).
@Suite struct AMQPConnectionRefusalTests {
    /// A listener on a free port of 127.0.0.1 that accepts each connection and closes it at once, as a proxy in front
    /// of a broker that is not up yet does.
    // Thread safety: immutable once made; the thread owns the socket.
    final class ClosingListener: @unchecked Sendable {
        let port: UInt16
        private let socket: Int32

        init() throws {
            let listening = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, length) }
            }
            guard bound == 0, listen(listening, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
            }
            socket = listening
            port = UInt16(bigEndian: address.sin_port)
            Thread.detachNewThread {
                while true {
                    let accepted = accept(listening, nil, nil)
                    guard accepted >= 0 else { return }
                    close(accepted)
                }
            }
        }

        deinit {
            shutdown(socket, Int32(SHUT_RDWR))
            close(socket)
        }
    }

    @Test func aConnectionClosedBeforeLoginIsAFailureToConnectNotARefusedPassword() throws {
        let listener = try ClosingListener()
        var configuration = try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:\(listener.port)/%2F")
        configuration.connectTimeout = .seconds(5)
        let error = #expect(throws: AMQPError.self) { _ = try AMQPConnection(configuration: configuration) }
        #expect(error?.code == .connectionFailed, "\(String(describing: error))")
        #expect(error?.message.contains("closed before the broker let this client log in") == true)
    }

    @Test func nothingListeningIsAFailureToConnect() throws {
        let error = #expect(throws: AMQPError.self) {
            _ = try AMQPConnection(configuration: AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:1/%2F"))
        }
        #expect(error?.code == .connectionFailed)
    }
}
