import Foundation
import Imago
import ImagoCommandLine

/// The processors' own figures: a Gaussian blur of a 4000 × 3000 photo-sized bitmap
/// on one core, at a small and a large radius (the box approximation costs the same
/// at any radius), with a copy of the pixels as the floor of what any processor costs.
enum ProcessorBenchmark {
    struct Figures {
        let radius: Double
        let seconds: Double
    }

    /// A 4000 × 3000 bitmap of smooth gradients and noise, as a photo has both.
    static func photo() -> Bitmap {
        let (w, h) = (4000, 3000)
        var generator = SplitMix(state: 7)
        let pixels = [UInt8](unsafeUninitializedCapacity: w * h * 4) { buffer, count in
            for y in 0..<h {
                for x in 0..<w {
                    let i = (y * w + x) * 4
                    let noise = UInt8(truncatingIfNeeded: generator.next() & 31)
                    buffer[i] = UInt8(truncatingIfNeeded: x / 16) &+ noise
                    buffer[i + 1] = UInt8(truncatingIfNeeded: y / 12) &+ noise
                    buffer[i + 2] = UInt8(truncatingIfNeeded: (x + y) / 28)
                    buffer[i + 3] = 255
                }
            }
            count = w * h * 4
        }
        return Bitmap(width: w, height: h, pixels: pixels)
    }

    /// The CPU time the calling thread has used, in seconds: the blur runs on one
    /// thread, so time spent waiting for a core on a busy machine does not count.
    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The fastest of `runs` blurs at each radius, in the CPU time of the calling thread.
    static func measure(runs: Int) -> (copy: Double, blurs: [Figures]) {
        let bitmap = photo()
        func fastest(_ body: () -> Bitmap) -> Double {
            var best = Double.infinity
            for _ in 0..<max(1, runs) {
                let start = threadCPUSeconds()
                let result = body()
                best = min(best, threadCPUSeconds() - start)
                precondition(result.width == bitmap.width, "the processor lost the image")
            }
            return best
        }
        let copy = fastest {
            let pixels = [UInt8](unsafeUninitializedCapacity: bitmap.pixels.count) { buffer, count in
                _ = buffer.initialize(from: bitmap.pixels)
                count = bitmap.pixels.count
            }
            return Bitmap(width: bitmap.width, height: bitmap.height, pixels: pixels)
        }
        let blurs = [2.0, 20.0].map { radius in
            Figures(radius: radius, seconds: fastest { ImageProcessors.GaussianBlur(radius: radius).process(bitmap) })
        }
        return (copy, blurs)
    }

    static func printFigures(json: Bool, runs: Int) {
        let figures = measure(runs: runs)
        if json {
            struct Record: Encodable {
                let measure: String
                let radius: Double
                let seconds: Double
                let copySeconds: Double
            }
            for blur in figures.blurs {
                Output.json(Record(
                    measure: "gaussian blur 4000×3000, one core", radius: blur.radius, seconds: blur.seconds,
                    copySeconds: figures.copy))
            }
            return
        }
        var text = "\nprocessors (one core, CPU time, fastest of \(runs))\n"
        for blur in figures.blurs {
            text += String(format: "gaussian blur 4000×3000, radius %-4g  %.3f s   (goal well under 1 s)\n", blur.radius, blur.seconds)
        }
        text += String(format: "copy of the same pixels               %.3f s", figures.copy)
        Output.line(text)
    }
}
