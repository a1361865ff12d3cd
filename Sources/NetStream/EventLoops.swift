import NIOPosix
import Threading

/// The event loops every server and connection of camrec's runs on: NIO's shared group, its threads at the
/// nice value camrec was started at. NIO starts them from whichever thread first asks for the group, a
/// dispatch thread in camrec, and they would keep that thread's nice value (0 or −4) under `nice -n 15 camrec`.
public enum EventLoops {
    public static let shared: MultiThreadedEventLoopGroup = {
        let group = MultiThreadedEventLoopGroup.singleton
        for loop in group.makeIterator() {
            loop.execute { ProcessNice.applyToCurrentThread() }
        }
        return group
    }()
}
