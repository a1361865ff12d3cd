import Hub
import Glibc
import SystemPackage

/// The stream on stdout (`-`), for pipes into ffmpeg, ffplay or a network tool.
public final class StandardOutputSink: ByteSink {
    public let label = "stdout"

    public init() {}

    public func open() throws {
        if isatty(STDOUT_FILENO) == 1 {
            throw OutputError(.unwritable, "refusing to write H.264 to a terminal; redirect stdout (e.g. | ffplay -) or give a file name")
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            var offset = 0
            while offset < bytes.count {
                offset += try FileDescriptor.standardOutput.write(UnsafeRawBufferPointer(rebasing: bytes[offset...]),
                                                                  retryOnInterrupt: true)
            }
        } catch let error as Errno {
            if error == .brokenPipe {
                throw OutputError(.closed, "stdout was closed by the reader; the recording stopped")
            }
            if error == .noSpace {
                throw OutputError(.diskFull, "disk full writing stdout")
            }
            throw OutputError(.unwritable, "writing stdout failed: \(error)")
        }
    }

    public func commitBoundary() {}

    public func close(keep: Bool) throws -> String? { nil }
}
