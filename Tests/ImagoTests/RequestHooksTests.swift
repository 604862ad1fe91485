import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The caller's hooks on each transfer: an async request modifier awaited before
/// every attempt, and a redirect handler seeing each redirect, through both HTTP
/// loaders and the test server on 127.0.0.1.
@Suite struct RequestHooksTests {
    enum Client: String, CaseIterable {
        case curl, urlSession

        func loader(_ configuration: HTTPLoaderConfiguration) -> any DataLoading {
            switch self {
            case .curl: CurlDataLoader(configuration: configuration)
            case .urlSession: URLSessionDataLoader(configuration: configuration)
            }
        }
    }

    func imageLoader(_ dataLoader: any DataLoading, retries: Int = 1, modifier: (@Sendable (URLRequest) async throws(ImagoError) -> URLRequest)? = nil) -> ImageLoader {
        var configuration = ImageLoader.Configuration(
            dataLoader: dataLoader, retryPolicy: RetryPolicy(maximumAttempts: retries, baseDelay: 0.01, maximumDelay: 0.02))
        configuration.asyncRequestModifier = modifier
        return ImageLoader(configuration: configuration, cache: ImageCache())
    }

    @Test(arguments: Client.allCases)
    func theAsyncModifierIsAwaitedBeforeEachAttemptAndMayRefuse(_ client: Client) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let calls = Locked(0)
        server.route("/token.png") { request in
            calls.withLock { $0 += 1; return $0 } == 1 ? .text("busy", status: 503)
                : .ok(pngData(request.header("Authorization") == "Bearer t2" ? 200 : 1))
        }
        let tokens = Locked(0)
        let loader = imageLoader(client.loader(HTTPLoaderConfiguration()), retries: 2) { request async throws(ImagoError) in
            try? await Task.sleep(for: .milliseconds(5))
            var request = request
            let token = tokens.withLock { $0 += 1; return $0 }
            request.setValue("Bearer t\(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        let response = try await loader.image(for: ImageRequest(url: server.url("/token.png")))
        // The retry carried a token the modifier made for it.
        #expect(response.image.bitmap[0, 0].r == 200)
        #expect(server.requests(for: "/token.png").map { $0.header("Authorization") } == ["Bearer t1", "Bearer t2"])

        let refusing = imageLoader(client.loader(HTTPLoaderConfiguration()), retries: 3) { request async throws(ImagoError) in
            throw .invalidRequest(url: request.url?.absoluteString ?? "", reason: "signed out")
        }
        await #expect(throws: ImagoError.invalidRequest(url: server.url("/refused.png").absoluteString, reason: "signed out")) {
            try await refusing.image(for: ImageRequest(url: server.url("/refused.png")))
        }
        #expect(server.count(for: "/refused.png") == 0)
    }

    @Test(arguments: Client.allCases)
    func theRedirectHandlerSeesChangesAndRefusesRedirects(_ client: Client) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/old.png") { _ in .redirect(to: "/moved.png", status: 301) }
        server.route("/moved.png") { _ in .ok(pngData(1)) }
        server.route("/mirror.png") { request in .ok(pngData(request.header("X-Mirror") == "yes" ? 50 : 2)) }
        server.route("/secret.png") { _ in .redirect(to: "/moved.png") }
        let seen = Locked<[HTTPRedirect]>([])
        let mirror = server.url("/mirror.png")
        let handler: RedirectHandler = { redirect in
            seen.withLock { $0.append(redirect) }
            if redirect.source.path == "/secret.png" { return .refuse(reason: "no redirects from secrets") }
            return .followTo(mirror, headers: ["X-Mirror": "yes"])
        }
        let loader = imageLoader(client.loader(HTTPLoaderConfiguration(redirectHandler: handler)))
        let response = try await loader.image(for: ImageRequest(url: server.url("/old.png")))
        #expect(response.image.bitmap[0, 0].r == 50)
        #expect(server.count(for: "/moved.png") == 0 && server.count(for: "/mirror.png") == 1)
        let first = seen.withLock { $0.first }
        #expect(first?.statusCode == 301 && first?.target == server.url("/moved.png") && first?.hop == 0)
        #expect(first?.headers["location"] == "/moved.png")

        await #expect(throws: ImagoError.redirectRefused(url: server.url("/moved.png").absoluteString, reason: "no redirects from secrets")) {
            try await loader.image(for: ImageRequest(url: server.url("/secret.png")))
        }
        #expect(server.count(for: "/moved.png") == 0)
    }
}
