/// The start of a fragmented MP4 file: `ftyp`, then a `moov` whose sample tables are empty (every
/// sample is in the fragments that follow) and whose `mvex` says fragments follow. One video track.
enum MP4Header {
    /// The video track's ID, in `tkhd`, `trex` and every fragment's `tfhd`.
    static let trackID: UInt32 = 1
    /// The movie's own timescale (`mvhd`): its durations are all zero here.
    static let movieTimescale: UInt32 = 1000

    static func write(_ entry: MP4SampleEntry, timescale: UInt32, into boxes: inout MP4BoxBuffer) {
        // The brands libavformat writes for default-base-is-moof fragments.
        boxes.box("ftyp") { ftyp in
            ftyp.fourCC("iso5")
            ftyp.u32(512)
            ftyp.fourCC("iso5")
            ftyp.fourCC("iso6")
            ftyp.fourCC("mp41")
        }
        boxes.box("moov") { moov in
            moov.box("mvhd", version: 0) { mvhd in
                mvhd.u32(0)                       // creation_time
                mvhd.u32(0)                       // modification_time
                mvhd.u32(movieTimescale)
                mvhd.u32(0)                       // duration: the fragments'
                mvhd.u32(0x0001_0000)             // rate 1.0
                mvhd.u16(0x0100)                  // volume 1.0
                mvhd.zeros(10)
                mvhd.unityMatrix()
                mvhd.zeros(24)                    // pre_defined
                mvhd.u32(trackID + 1)             // next_track_ID
            }
            moov.box("trak") { trak in
                writeTrack(entry, timescale: timescale, into: &trak)
            }
            moov.box("mvex") { mvex in
                mvex.box("trex", version: 0) { trex in
                    trex.u32(trackID)
                    trex.u32(1)                   // default_sample_description_index
                    trex.u32(0)                   // default duration, size, flags: each fragment says
                    trex.u32(0)
                    trex.u32(0)
                }
            }
        }
    }

    private static func writeTrack(_ entry: MP4SampleEntry, timescale: UInt32, into trak: inout MP4BoxBuffer) {
        trak.box("tkhd", version: 0, flags: 3) { tkhd in   // enabled, in the movie
            tkhd.u32(0)                           // creation_time
            tkhd.u32(0)                           // modification_time
            tkhd.u32(trackID)
            tkhd.u32(0)                           // reserved
            tkhd.u32(0)                           // duration
            tkhd.zeros(8)
            tkhd.u16(0)                           // layer
            tkhd.u16(0)                           // alternate_group
            tkhd.u16(0)                           // volume: video
            tkhd.u16(0)
            tkhd.unityMatrix()
            tkhd.u32(UInt32(clamping: entry.width) << 16)   // 16.16
            tkhd.u32(UInt32(clamping: entry.height) << 16)
        }
        trak.box("mdia") { mdia in
            mdia.box("mdhd", version: 0) { mdhd in
                mdhd.u32(0)
                mdhd.u32(0)
                mdhd.u32(timescale)
                mdhd.u32(0)                       // duration
                mdhd.u16(0x55C4)                  // language "und"
                mdhd.u16(0)
            }
            mdia.box("hdlr", version: 0) { hdlr in
                hdlr.u32(0)
                hdlr.fourCC("vide")
                hdlr.zeros(12)
                hdlr.append("VideoHandler".utf8)
                hdlr.u8(0)
            }
            mdia.box("minf") { minf in
                minf.box("vmhd", version: 0, flags: 1) { vmhd in
                    vmhd.zeros(8)                 // graphicsmode, opcolor
                }
                minf.box("dinf") { dinf in
                    dinf.box("dref", version: 0) { dref in
                        dref.u32(1)
                        dref.box("url ", version: 0, flags: 1) { _ in }   // the media is in this file
                    }
                }
                minf.box("stbl") { stbl in
                    stbl.box("stsd", version: 0) { stsd in
                        stsd.u32(1)
                        entry.write(into: &stsd)
                    }
                    stbl.box("stts", version: 0) { $0.u32(0) }
                    stbl.box("stsc", version: 0) { $0.u32(0) }
                    stbl.box("stsz", version: 0) { stsz in
                        stsz.u32(0)                // sample_size: each its own
                        stsz.u32(0)
                    }
                    stbl.box("stco", version: 0) { $0.u32(0) }
                }
            }
        }
    }
}
