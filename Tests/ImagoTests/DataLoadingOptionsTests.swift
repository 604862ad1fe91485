import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `DataLoadingOptions` on both network loaders, against the real test server: a
/// body cut short returned as truncated when asked for, and the bytes handed over as
/// they arrive.
@Suite struct DataLoadingOptionsTests {
    /// Loads `url` with `options`, collecting every progress report.
    static func load(
        _ loader: any DataLoading, _ url: URL, options: DataLoadingOptions
    ) async -> (Result<DataResponse, ImagoError>, [DataLoadingProgress]) {
        let reports = Locked<[DataLoadingProgress]>([])
        let result = await withTimeLimit(60) { () async -> Result<DataResponse, ImagoError> in
            do throws(ImagoError) {
                return .success(try await loader.loadData(for: URLRequest(url: url), options: options) { progress in
                    reports.withLock { $0.append(progress) }
                })
            } catch {
                return .failure(error)
            }
        } ?? .failure(.timedOut(url: url.absoluteString, seconds: 60))
        return (result, reports.withLock { $0 })
    }

    @Test(arguments: LoaderKind.all) func aBodyCutShortIsReturnedAsTruncatedWhenAskedFor(_ kind: LoaderKind) async throws {
        try await DataLoadingTests.withServer(kind) { server, loader in
            let body = DataLoadingTests.bytes(4_000)
            server.route("/short") { _ in .truncate(declaredLength: 10_000, actualBody: body) }
            server.route("/reset") { _ in .resetAfter(3_000, of: DataLoadingTests.bytes(10_000)) }
            server.route("/missing") { _ in .truncate(declaredLength: 10_000, actualBody: body).withStatus(404) }
            server.route("/whole", data: body)
            let accepting = DataLoadingOptions(acceptsTruncatedBody: true)

            let (short, _) = await Self.load(loader, server.url("/short"), options: accepting)
            let response = try short.get()
            #expect(response.isTruncated && response.data == body && response.statusCode == 200)

            // A connection reset mid-body: what arrived before it.
            let (reset, _) = await Self.load(loader, server.url("/reset"), options: accepting)
            if case .success(let response) = reset {
                #expect(response.isTruncated && response.data == DataLoadingTests.bytes(10_000).prefix(response.data.count))
            } else {
                Issue.record("\(kind): a reset body was not returned truncated: \(reset)")
            }

            // Never for an error status, never for a whole body, never unasked.
            guard case .failure(.network) = await Self.load(loader, server.url("/missing"), options: accepting).0 else {
                Issue.record("\(kind): a cut 404 body was returned")
                return
            }
            #expect(try await Self.load(loader, server.url("/whole"), options: accepting).0.get().isTruncated == false)
            guard case .failure(.network) = await Self.load(loader, server.url("/short"), options: DataLoadingOptions()).0 else {
                Issue.record("\(kind): a cut body was returned unasked")
                return
            }
        }
    }

    @Test(arguments: LoaderKind.all) func chunksArriveInOrderAndMakeTheBody(_ kind: LoaderKind) async throws {
        try await DataLoadingTests.withServer(kind) { server, loader in
            let body = DataLoadingTests.bytes(60_000)
            server.route("/slow") { _ in .trickle(body, bytesPerChunk: 7_000, interval: 0.01) }
            let (result, reports) = await Self.load(loader, server.url("/slow"), options: DataLoadingOptions(reportsChunks: true))
            #expect((try? result.get())?.data == body)
            let chunks = reports.compactMap(\.chunk)
            #expect(chunks.count == reports.count && chunks.count >= 2)
            #expect(chunks.reduce(Data(), +) == body)
            // Each report's count is the sum of the chunks so far.
            var sum: Int64 = 0
            for report in reports {
                sum += Int64(report.chunk?.count ?? 0)
                #expect(report.received == sum)
            }
            // Unasked, no chunks.
            let (_, plain) = await Self.load(loader, server.url("/slow"), options: DataLoadingOptions())
            #expect(!plain.isEmpty && plain.allSatisfy { $0.chunk == nil })
        }
    }

    /// A data loader written before the options existed still works through the
    /// default: counts only, and a cut body is its error.
    @Test func aLoaderWithoutTheNewRequirementGetsTheDefault() async throws {
        let counting = ControlledLoader(script: .init { _ in Data([1, 2, 3]) })
        let (result, reports) = await Self.load(
            counting, URL(string: "http://example.invalid/a")!, options: DataLoadingOptions(acceptsTruncatedBody: true, reportsChunks: true))
        #expect(try result.get().data == Data([1, 2, 3]))
        #expect(reports.count == 1 && reports[0].received == 3 && reports[0].chunk == nil)
    }
}

extension TestServer.Response {
    /// The same response with another status.
    func withStatus(_ status: Int) -> Self {
        var copy = self
        copy.status = status
        return copy
    }
}
