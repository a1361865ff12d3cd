import Glibc

/// A joinable POSIX thread running one closure; the pipeline's stages each get one.
public final class WorkerThread: @unchecked Sendable {
    private var thread: pthread_t?
    private let body: () -> Void
    public let name: String

    public init(name: String, body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }

    public func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { arg in
            let worker = Unmanaged<WorkerThread>.fromOpaque(arg!).takeRetainedValue()
            worker.body()
            return nil
        }, box)
        precondition(rc == 0, "could not start thread \(name): \(rc)")
        thread = t
    }

    public func join() {
        guard let t = thread else { return }
        pthread_join(t, nil)
        thread = nil
    }
}
